"""The pieces of ``make demo`` (scripts/demo.py): train a small CPU function
classifier and sentence encoder on CSAbstruct with ``spacy train``, assemble
them with the English parser and the phrase labeler into one pipeline, and
annotate a paper with it.

Everything runs offline on a CPU. Trained models are kept under the output
directory (``.demo/`` by default) and reused by later runs.
"""
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import spacy
from spacy.language import Language

from .util import load_parser

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"
PHRASES_DIR = "iwatsuki2021-fe-database-cl"
CSABSTRUCT_DIR = "csabstruct"

CLASSIFIER = "rhetoric_function_classifier"
ENCODER = "rhetoric_sentence_encoder"
TOK2VEC_FACTORIES = ("tok2vec", "transformer")


class DemoError(RuntimeError):
    """A problem the user can fix (missing data, bad path); printed without a traceback."""


def data_dir() -> Path:
    """``$SPACY_RHETORIC_DATA``, or ``../shared/data`` next to the repository."""
    env = os.environ.get("SPACY_RHETORIC_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@dataclass
class DemoData:
    train: Path  # CSAbstruct train.jsonl
    dev: Path  # CSAbstruct dev.jsonl
    phrases: Path  # Iwatsuki phrase database (directory of label<TAB>phrase files)


def find_data(root: Optional[Path] = None) -> DemoData:
    """The files the demo needs under ``root``; a DemoError saying which are
    missing and how to point the demo at them otherwise."""
    root = Path(root) if root is not None else data_dir()
    data = DemoData(train=root / CSABSTRUCT_DIR / "train.jsonl", dev=root / CSABSTRUCT_DIR / "dev.jsonl",
                    phrases=root / PHRASES_DIR)
    missing = [str(p) for p in (data.train, data.dev, data.phrases) if not p.exists()]
    if missing:
        raise DemoError(
            "The demo data is missing:\n  " + "\n  ".join(missing)
            + f"\nSet SPACY_RHETORIC_DATA to the directory that holds {CSABSTRUCT_DIR}/train.jsonl, "
            f"{CSABSTRUCT_DIR}/dev.jsonl and {PHRASES_DIR}/ (see project.yml assets; "
            f"default: {REPO.parent / 'shared' / 'data'})."
        )
    return data


# --------------------------------------------------------------------------
# Training (spaCy's own training loop)
# --------------------------------------------------------------------------


def convert_csabstruct(jsonl: Path, output: Path) -> Path:
    """CSAbstruct ``.jsonl`` -> ``.spacy`` DocBin with gold sentence labels
    (the input of the encoder's SentenceCorpus reader). Kept if it exists."""
    from .cli.convert import convert_corpus

    if not output.exists():
        stats = convert_corpus("csabstruct", jsonl, output)
        print(f"  converted {jsonl} -> {output} ({stats.docs} abstracts, {stats.sentences} sentences)")
    return output


def train_pipeline(config: Path, output: Path, overrides: Dict[str, Any], *, retrain: bool = False) -> Path:
    """Train ``config`` with ``spacy.cli.train.train`` into ``output`` and
    return the final model (``model-last``, whose meta.json holds the dev
    scores of its last evaluation, which is the final step). A model already
    in ``output`` trained with the same overrides is reused."""
    from spacy.cli.train import train

    model = output / "model-last"
    stamp = output / "demo_overrides.json"
    wanted = json.dumps({k: str(v) for k, v in sorted(overrides.items())}, sort_keys=True)
    if not retrain and (model / "meta.json").exists() and stamp.exists() and stamp.read_text() == wanted:
        print(f"  reusing {model} (delete {output} or pass --retrain to train again)")
        return model
    start = time.perf_counter()
    train(config, output, use_gpu=-1, overrides=overrides)
    stamp.write_text(wanted)
    print(f"  trained {config.name} in {time.perf_counter() - start:.0f} s -> {model}")
    return model


def dev_scores(model: Path) -> Dict[str, Any]:
    """The dev scores spaCy's training measured for ``model`` (meta.json
    ``performance``)."""
    meta = json.loads((Path(model) / "meta.json").read_text(encoding="utf8"))
    return meta.get("performance", {})


def training_overrides(train: Path, dev: Path, steps: int) -> Dict[str, Any]:
    """Paths, a fixed step budget and a single evaluation at the last step."""
    return {
        "paths.train": str(train),
        "paths.dev": str(dev),
        "training.max_steps": int(steps),
        "training.eval_frequency": int(steps),
        "training.patience": 0,
        "training.max_epochs": 0,
    }


def train_demo_models(data: DemoData, output: Path, *, classifier_steps: int, encoder_steps: int,
                      retrain: bool = False) -> Tuple[Path, Path]:
    """Train the CPU classifier (configs/classifier_cpu.cfg: tok2vec + context
    architecture) and encoder (configs/encoder_cpu.cfg) into ``output``."""
    output.mkdir(parents=True, exist_ok=True)
    print(f"\n== training the function classifier ({classifier_steps} steps) ==")
    classifier = train_pipeline(
        CONFIGS / "classifier_cpu.cfg", output / "classifier",
        training_overrides(data.train, data.dev, classifier_steps), retrain=retrain)
    print(f"\n== training the sentence encoder ({encoder_steps} steps) ==")
    corpus = output / "corpus"
    train_spacy = convert_csabstruct(data.train, corpus / "train.spacy")
    dev_spacy = convert_csabstruct(data.dev, corpus / "dev.spacy")
    encoder_overrides = training_overrides(train_spacy, dev_spacy, encoder_steps)
    # The config's warm-up schedule runs to training.max_steps; keep it short.
    encoder_overrides["training.optimizer.learn_rate.warmup_steps"] = max(1, encoder_steps // 10)
    encoder = train_pipeline(CONFIGS / "encoder_cpu.cfg", output / "encoder", encoder_overrides, retrain=retrain)
    return classifier, encoder


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------


def _component(nlp: Language, factory: str) -> str:
    names = [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == factory]
    if len(names) != 1:
        raise ValueError(f"expected one {factory} component, found {names} in {nlp.pipe_names}")
    return names[0]


def _detach_listeners(trained: Language, name: str) -> None:
    """Give ``name`` its own copy of the tok2vec/transformer it listens to in
    its training pipeline, so that it runs without that upstream component
    (and never listens to the parser's own ``tok2vec`` by accident)."""
    for upstream in trained.pipe_names:
        if trained.get_pipe_meta(upstream).factory not in TOK2VEC_FACTORIES:
            continue
        if name in getattr(trained.get_pipe(upstream), "listening_components", []):
            trained.replace_listeners(upstream, name, ["model.tok2vec"])


def assemble(parser: Union[str, Language], phrases: Union[Path, List[Tuple[str, str]], None],
             trained: List[Union[Path, Language]], *, n: int = 5) -> Language:
    """Parser + ``rhetoric_phrase_labeler`` (initialised from ``phrases``) +
    the classifier / encoder of each trained pipeline in ``trained``, sourced
    with ``nlp.add_pipe(name, source=trained_nlp)``."""
    nlp = load_parser(parser, exclude=["ner"]) if isinstance(parser, str) else parser
    if phrases is not None:
        labeler = nlp.add_pipe("rhetoric_phrase_labeler", config={"n": n})
        labeler.initialize(phrases=str(phrases) if isinstance(phrases, Path) else phrases, nlp=nlp)
    for source in trained:
        source_nlp = spacy.load(source) if not isinstance(source, Language) else source
        for factory in (CLASSIFIER, ENCODER):
            if factory not in [source_nlp.get_pipe_meta(n).factory for n in source_nlp.pipe_names]:
                continue
            name = _component(source_nlp, factory)
            _detach_listeners(source_nlp, name)
            nlp.add_pipe(name, name=factory, source=source_nlp)
    return nlp


# --------------------------------------------------------------------------
# Annotating a paper
# --------------------------------------------------------------------------


def paragraphs(text: str) -> Iterator[Tuple[Optional[str], str]]:
    """(section, paragraph) pairs of a plain-text paper split at blank lines;
    a short block without final punctuation is a heading and sets the
    section of the paragraphs after it."""
    section = None
    for block in text.split("\n\n"):
        block = " ".join(block.split())
        if not block:
            continue
        if len(block) < 60 and block[-1] not in ".!?":
            section = block
            continue
        yield section, block


def most_similar(sents: List[Any], index: int) -> Tuple[Optional[int], float]:
    """Index of the sentence most similar to ``sents[index]`` by
    ``sent.similarity`` (the encoder's vectors) and the similarity."""
    best, best_sim = None, -2.0
    for j, other in enumerate(sents):
        if j == index:
            continue
        sim = sents[index].similarity(other)
        if sim > best_sim:
            best, best_sim = j, sim
    return best, best_sim


def annotate(nlp: Language, text: str, *, n_similar: int = 3, width: int = 100) -> Dict[str, int]:
    """Run ``nlp`` over the paragraphs of ``text`` and print every sentence
    with its function label and top score, its phrase label and n-gram, and
    for ``n_similar`` sentences the most similar other sentence."""
    pieces = list(paragraphs(text))
    sents, counts = [], {"sentences": 0, "phrase_labeled": 0}
    current: Any = object()
    for (section, _), doc in zip(pieces, nlp.pipe(p for _, p in pieces)):
        if section != current:
            print(f"\n== {section or '(no heading)'} ==")
            current = section
        for sent in doc.sents:
            sents.append(sent)
            counts["sentences"] += 1
            print(f"[{len(sents):>2}] {_short(sent.text, width)}")
            label, scores = sent._.rhetoric_label, sent._.rhetoric_scores or {}
            if label is not None:
                print(f"       function: {label} ({scores.get(label, float('nan')):.2f})")
            if sent._.phrase_label is not None:
                counts["phrase_labeled"] += 1
                print(f"       phrase:   {sent._.phrase_label}  \"{sent._.phrase_match.text}\"")
    with_vectors = [i for i, s in enumerate(sents) if s._.rhetoric_vector is not None]
    if with_vectors and n_similar > 0:
        print("\n== most similar sentence (sent.similarity, encoder vectors) ==")
        step = max(1, len(with_vectors) // n_similar)
        for i in with_vectors[::step][:n_similar]:
            j, sim = most_similar([sents[k] for k in with_vectors], with_vectors.index(i))
            if j is None:
                continue
            print(f"[{i + 1:>2}] {_short(sents[i].text, width)}")
            print(f"  ~ [{with_vectors[j] + 1:>2}] {_short(sents[with_vectors[j]].text, width)}  "
                  f"(cosine {sim:.2f})")
    return counts


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
