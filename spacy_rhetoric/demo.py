"""``spacy-rhetoric demo`` (and ``make demo``): train a small CPU function
classifier and sentence encoder on CSAbstruct with ``spacy train`` and the
packaged configs (``spacy_rhetoric/configs/classifier_cpu.cfg``,
``encoder_cpu.cfg``), assemble them with the English parser and the phrase
labeler into one pipeline (``spacy_rhetoric.assemble``), and annotate a paper
with it (by default the packaged ``assets/sample_paper.txt``).

Everything runs offline on a CPU, from a checkout or an installed wheel.
Trained models are kept under the output directory (``.demo/`` by default)
and reused by later runs. Data: ``$SPACY_RHETORIC_DATA``, else
``../shared/data`` (from the current directory, or beside the source checkout).
"""
import hashlib
import json
import os
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language

from .assemble import CLASSIFIER, ENCODER, assemble, check_pipeline_output, save_pipeline
from .configs import config_path
from .io import PathError, check_input, check_output

DATA_ENV = "SPACY_RHETORIC_DATA"
PHRASES_DIR = "iwatsuki2021-fe-database-cl"
CSABSTRUCT_DIR = "csabstruct"
SAMPLE_PAPER = "sample_paper.txt"


class DemoError(PathError):
    """A problem the user can fix (missing data, bad path); printed without a traceback."""


def default_data_dirs() -> List[Path]:
    """Where the demo looks for data without ``$SPACY_RHETORIC_DATA``:
    ``../shared/data`` from the current directory, then (when the package is
    imported from a source checkout) beside that checkout."""
    dirs = [Path.cwd().parent / "shared" / "data"]
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "setup.py").is_file() and checkout.parent / "shared" / "data" != dirs[0].resolve():
        dirs.append(checkout.parent / "shared" / "data")
    return dirs


def data_dir() -> Path:
    """``$SPACY_RHETORIC_DATA``, or the first of ``default_data_dirs()`` that exists."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    dirs = default_data_dirs()
    return next((d for d in dirs if d.is_dir()), dirs[0])


def sample_paper() -> Path:
    """The packaged sample paper (plain text, blank-line paragraphs)."""
    return Path(str(files(__package__) / "assets" / SAMPLE_PAPER))


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
            + f"\nSet {DATA_ENV} to the directory that holds {CSABSTRUCT_DIR}/train.jsonl, "
            f"{CSABSTRUCT_DIR}/dev.jsonl and {PHRASES_DIR}/ (see project.yml assets; without it the "
            f"demo looks in: {', '.join(str(d) for d in default_data_dirs())})."
        )
    return data


# --------------------------------------------------------------------------
# Training (spaCy's own training loop)
# --------------------------------------------------------------------------


def convert_csabstruct(jsonl: Path, output: Path) -> Path:
    """CSAbstruct ``.jsonl`` -> ``.spacy`` DocBin with gold sentence labels
    (the input of the encoder's SentenceCorpus reader). Kept if it exists and
    is newer than ``jsonl``."""
    from .cli.convert import convert_corpus

    if not output.exists() or output.stat().st_mtime_ns < jsonl.stat().st_mtime_ns:
        stats = convert_corpus("csabstruct", jsonl, output)
        print(f"  converted {jsonl} -> {output} ({stats.docs} abstracts, {stats.sentences} sentences)")
    return output


def _stamp(config: Path, overrides: Dict[str, Any], inputs: List[Path]) -> str:
    """What a trained model depends on: the config text, the overrides and
    the size and mtime of the input files."""
    return json.dumps({
        "config_sha1": hashlib.sha1(config.read_bytes()).hexdigest(),
        "overrides": {k: str(v) for k, v in overrides.items()},
        "inputs": {str(p): [p.stat().st_size, p.stat().st_mtime_ns] for p in inputs},
    }, sort_keys=True)


def train_pipeline(config: Path, output: Path, overrides: Dict[str, Any], *, inputs: Sequence[Path] = (),
                   retrain: bool = False) -> Path:
    """Train ``config`` with ``spacy.cli.train.train`` into ``output`` and
    return the final model (``model-last``, whose meta.json holds the dev
    scores of its last evaluation, which is the final step). A model already
    in ``output`` trained from the same config, overrides and ``inputs``
    (files, by size and mtime) is reused."""
    from spacy.cli.train import train

    model = output / "model-last"
    stamp = output / "demo_stamp.json"
    wanted = _stamp(config, overrides, list(inputs))
    if not retrain and (model / "meta.json").exists() and stamp.exists() and stamp.read_text() == wanted:
        print(f"  reusing {model} (delete {output} or pass --retrain to train again)")
        return model
    stamp.unlink(missing_ok=True)  # an interrupted run is never reused
    start = time.perf_counter()
    train(config, output, use_gpu=-1, overrides=overrides)
    stamp.write_text(wanted)
    print(f"  trained {config} in {time.perf_counter() - start:.0f} s -> {model}")
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
    """Train the CPU classifier (packaged config ``classifier_cpu``: tok2vec +
    context architecture) and encoder (``encoder_cpu``) into ``output``."""
    output.mkdir(parents=True, exist_ok=True)
    print(f"\n== training the function classifier ({classifier_steps} steps) ==")
    classifier = train_pipeline(
        config_path("classifier_cpu"), output / "classifier",
        training_overrides(data.train, data.dev, classifier_steps), inputs=[data.train, data.dev], retrain=retrain)
    print(f"\n== training the sentence encoder ({encoder_steps} steps) ==")
    corpus = output / "corpus"
    train_spacy = convert_csabstruct(data.train, corpus / "train.spacy")
    dev_spacy = convert_csabstruct(data.dev, corpus / "dev.spacy")
    encoder_overrides = training_overrides(train_spacy, dev_spacy, encoder_steps)
    # The config's warm-up schedule runs to training.max_steps; keep it short.
    encoder_overrides["training.optimizer.learn_rate.warmup_steps"] = max(1, encoder_steps // 10)
    encoder = train_pipeline(config_path("encoder_cpu"), output / "encoder", encoder_overrides,
                             inputs=[train_spacy, dev_spacy], retrain=retrain)
    return classifier, encoder


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


# --------------------------------------------------------------------------
# The whole demo
# --------------------------------------------------------------------------


def run(paper: Optional[Path] = None, output: Path = Path(".demo"), *, classifier_steps: int = 400,
        encoder_steps: int = 400, retrain: bool = False, parser: str = "en_core_web_sm") -> Dict[str, int]:
    """Train (or reuse) the two models under ``output``, assemble
    ``output/pipeline``, annotate ``paper`` (default: the packaged sample
    paper) and print the dev scores. Inputs and outputs are checked before any
    work; returns the counts of ``annotate``."""
    from . import __version__

    start = time.perf_counter()
    data = find_data()
    paper = check_input(paper if paper is not None else sample_paper(), what="paper")
    inputs = [data.train, data.dev, data.phrases, paper]
    check_output(output, what="demo output directory", inputs=inputs, dir_ok=True)
    pipeline_dir = check_pipeline_output(output / "pipeline", inputs=inputs)
    print(f"spacy_rhetoric {__version__}; data from {data.train.parent.parent}; "
          f"configs from {config_path('classifier_cpu').parent}")

    classifier, encoder = train_demo_models(
        data, output, classifier_steps=classifier_steps, encoder_steps=encoder_steps, retrain=retrain)
    nlp, _ = assemble(parser, [(classifier, CLASSIFIER), (encoder, ENCODER)], phrases=data.phrases)
    save_pipeline(nlp, pipeline_dir)
    print(f"\npipeline {nlp.pipe_names} -> {pipeline_dir}")

    counts = annotate(nlp, paper.read_text(encoding="utf8"))

    clf, enc = dev_scores(classifier), dev_scores(encoder)
    print(f"\n{counts['sentences']} sentences of {paper}, {counts['phrase_labeled']} with a phrase label")
    print(f"Quick models, scored by spaCy on CSAbstruct dev after training "
          f"({classifier_steps} / {encoder_steps} steps):")
    print(f"  classifier F1 micro {clf.get('rhetoric_f_micro', float('nan')):.3f}, "
          f"macro {clf.get('rhetoric_f_macro', float('nan')):.3f}")
    print(f"  encoder P@1 {enc.get('encoder_p_at_1', float('nan')):.3f}, "
          f"MAP@R {enc.get('encoder_map_at_r', float('nan')):.3f}")
    print("  (longer training with the configs in spacy_rhetoric/configs/ does better; see benchmarks/README.md)")
    print(f"done in {time.perf_counter() - start:.0f} s")
    return counts
