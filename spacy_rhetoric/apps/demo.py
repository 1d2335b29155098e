"""``spacy-rhetoric demo`` (and ``make demo``): train a small CPU function
classifier, whose trunk also gives the sentence vectors, with ``spacy train``
and the packaged config,
assemble them with the English parser, the phrase labeler and the section
tagger into one pipeline (``spacy_rhetoric.apps.assemble``), and annotate a paper
with it, section by section.

- Classifier: ``configs/classifier.cfg``, the default (the
  section of each sentence is evidence the model weighs -- section dropout in
  training --, positions count within sections, hashed n-grams beside the
  tok2vec, a CRF over each section's sentences; back matter is ``other`` by
  rule), ``DEFAULT_CLASSIFIER_STEPS`` steps, on real sentence functions
  (``readers.fullpaper_corpus.write_fullpaper_corpus``): CSAbstruct train,
  the MuLMS-AZ materials-science papers and the AZ-CL computational-linguistics
  papers with expert zones (each when present in the data directory). The
  demo's fine-tune of the classifier's MiniLM member is a shorter pass
  (``DEMO_CLASSIFIER_SETTINGS``). The trained classifier is scored once,
  on the whole dev set (CSAbstruct dev), at the end
  (``training_runs.evaluate_on_dev``); spaCy's loop itself only scores one dev
  document after its first step.
- Sentence vectors: the classifier's fine-tuned MiniLM member is the trunk of
  two heads, its labels and ``sent._.rhetoric_vector`` (its vector head,
  ``VectorHead.v1``, trained with a metric loss on the papers' expert zones),
  from one pass. ``encoder_steps > 0`` (``--encoder-steps``) also trains the
  separate tok2vec encoder ``configs/encoder.cfg`` on CSAbstruct, in a child
  process beside the classifier on a machine with two cores or more
  (``training_runs.BackgroundTraining``); its vectors then replace the trunk's.
- Paper: any file ``read_papers`` reads (PDF, GROBID TEI, JATS, S2ORC, text);
  by default the GROBID TEI sample ``paper-formats/grobid-tei/N18-3011.tei.xml``
  of the data directory (an ACL paper; the file states no licence, so it is
  not shipped), else the packaged ``assets/sample_paper.txt``.

Everything runs offline on a CPU, from a checkout or an installed wheel.
Trained models are kept under the output directory (``.demo/`` by default)
and reused by later runs (``apps/training_runs.py``). Data: ``$SPACY_RHETORIC_DATA``, else
``../shared/data`` (from the current directory, or beside the source checkout).
"""
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from ..io import PathError, check_input, check_output
from ..resources import asset_path, config_path
from .assemble import CLASSIFIER, ENCODER, assemble, check_pipeline_output, save_pipeline
from .training_runs import (
    BackgroundTraining,
    dev_scores,
    end_evaluation_overrides,
    train_pipeline,
    training_overrides,
)

DATA_ENV = "SPACY_RHETORIC_DATA"
PHRASES_DIR = "iwatsuki2021-fe-database-cl"
CSABSTRUCT_DIR = "csabstruct"
PMC_FILE = "pmc-sents-full/dev.jsonl"
MULMS_FILE = "mulms-az/train.jsonl"
AZ_DIR = "az-cl"
SCISUMM_DIR = "cl-scisumm/training-40-manual"
TEI_PAPER = "paper-formats/grobid-tei/N18-3011.tei.xml"
SAMPLE_PAPER = "sample_paper.txt"
CLASSIFIER_CONFIG = "classifier"
ENCODER_CONFIG = "encoder"
# 800 steps of the network, the members fitted before them ([training.before_update]; RESULTS.md: the demo's time and scores)
DEFAULT_CLASSIFIER_STEPS = 800
DEFAULT_ENCODER_STEPS = 0  # the separate tok2vec encoder: off (the classifier's trunk gives the vectors)
# The demo's classifier is the packaged config with a shorter fine-tune of its MiniLM member (0.22 of a pass over
# the sentences of the papers and abstracts instead of one), so that ``make demo`` fits in 8 minutes on two cores.
DEMO_CLASSIFIER_SETTINGS: Dict[str, Any] = {"components.rhetoric_function_classifier.model.members.finetuned.epochs": 0.22}


# The pipeline's meta.json (spacy_rhetoric.meta): its name (``spacy package`` builds en_rhetoric_demo) and the
# corpora its classifier learns from (meta.SOURCES keys) by the DemoData field that holds each; the licence and
# the sources listed come from them.
DEMO_PIPELINE_NAME = "rhetoric_demo"
TRAINING_SOURCES = {"train": "csabstruct", "mulms": "mulms-az", "az": "az-cl"}


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
    return asset_path(SAMPLE_PAPER)


@dataclass
class DemoData:
    train: Path  # CSAbstruct train.jsonl
    dev: Path  # CSAbstruct dev.jsonl
    phrases: Path  # Iwatsuki phrase database (directory of label<TAB>phrase files)
    pmc: Optional[Path] = None  # PMC-Sents-FULL dev.jsonl, if present
    scisumm: Optional[Path] = None  # CL-SciSumm topics, if present
    paper: Optional[Path] = None  # the GROBID TEI sample paper, if present
    mulms: Optional[Path] = None  # MuLMS-AZ train.jsonl, if present
    az: Optional[Path] = None  # the AZ-CL papers (a folder of .annot files), if present

    def inputs(self) -> List[Path]:
        return [p for p in (self.train, self.dev, self.phrases, self.pmc, self.scisumm, self.mulms, self.az)
                if p is not None]


def training_sources(data: DemoData) -> List[str]:
    """The corpora the demo's classifier learns from (``TRAINING_SOURCES``
    whose data is there), for the pipeline's meta.json."""
    return [key for field, key in TRAINING_SOURCES.items() if getattr(data, field, None) is not None]


def assemble_demo_pipeline(data: DemoData, classifier: Path, encoder: Optional[Path], output: Path, *,
                           parser: str = "en_core_web_sm") -> Language:
    """The demo's pipeline: the parser, the phrase labeler (``data.phrases``),
    the section tagger and the trained models, with its own meta.json
    (``DEMO_PIPELINE_NAME``, spacy_rhetoric's version, the sources of
    :func:`training_sources` and their licence, the classifier's dev
    scores), saved to ``output``."""
    from .. import __version__

    models = [(classifier, CLASSIFIER)] + ([(encoder, ENCODER)] if encoder is not None else [])
    nlp, _ = assemble(parser, models, phrases=data.phrases, name=DEMO_PIPELINE_NAME, version=__version__,
                      training=training_sources(data))
    save_pipeline(nlp, output)
    return nlp


def find_data(root: Optional[Path] = None) -> DemoData:
    """The files the demo needs under ``root``; a DemoError saying which are
    missing and how to point the demo at them otherwise."""
    root = Path(root) if root is not None else data_dir()
    optional = {name: root / rel for name, rel in (("pmc", PMC_FILE), ("scisumm", SCISUMM_DIR),
                                                   ("paper", TEI_PAPER), ("mulms", MULMS_FILE), ("az", AZ_DIR))}
    data = DemoData(train=root / CSABSTRUCT_DIR / "train.jsonl", dev=root / CSABSTRUCT_DIR / "dev.jsonl",
                    phrases=root / PHRASES_DIR, **{k: p for k, p in optional.items() if p.exists()})
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
    from ..readers.convert import convert_corpus

    if not output.exists() or output.stat().st_mtime_ns < jsonl.stat().st_mtime_ns:
        stats = convert_corpus("csabstruct", jsonl, output)
        print(f"  converted {jsonl} -> {output} ({stats.docs} abstracts, {stats.sentences} sentences)")
    return output


def build_classifier_corpus(data: DemoData, output: Path) -> Tuple[Path, Path]:
    """The classifier's training corpus (``readers.fullpaper_corpus.write_fullpaper_corpus``:
    CSAbstruct train + the MuLMS-AZ and AZ-CL papers) under ``output``; kept if newer
    than every input and made from the same sources (``sources.json``)."""
    from ..readers.fullpaper_corpus import write_fullpaper_corpus

    train, dev, stamp = output / "train.spacy", output / "dev.spacy", output / "sources.json"
    sources = training_sources(data)
    newest = max(_mtime(p) for p in (data.train, data.dev, data.mulms, data.az) if p is not None)
    if not (train.exists() and dev.exists() and min(_mtime(train), _mtime(dev)) > newest
            and stamp.exists() and json.loads(stamp.read_text(encoding="utf8")) == sources):
        counts = write_fullpaper_corpus(data.train, data.dev, data.mulms, output, az=data.az)
        stamp.write_text(json.dumps(sources), encoding="utf8")
        print(f"  built {output}: train {counts['train']['sentences']} sentences "
              f"({counts['train']['csabstruct']} CSAbstruct abstracts, {counts['train']['mulms_papers']} MuLMS-AZ "
              f"papers, {counts['train'].get('az_papers', 0)} AZ-CL papers), dev {counts['dev']['sentences']} "
              "sentences (CSAbstruct dev)")
    return train, dev


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns


def train_demo_models(data: DemoData, output: Path, *, classifier_steps: int, encoder_steps: int,
                      retrain: bool = False, background: Optional[bool] = None,
                      gpu_id: int = -1) -> Tuple[Path, Optional[Path]]:
    """Train the CPU classifier (packaged config ``classifier``
    with ``DEMO_CLASSIFIER_SETTINGS``: tok2vec + context architecture + section
    input + n-grams + CRF, section dropout, and the members fitted by the
    config's member-fitting step) on CSAbstruct + MuLMS-AZ + AZ-CL and the encoder (``encoder``) on
    CSAbstruct into ``output`` (``encoder_steps`` = 0: no encoder, None is
    returned for it). With ``background`` (default: on a machine
    with two cores or more) the encoder trains in a child process beside the
    classifier (``training_runs.BackgroundTraining``), its log in ``output/encoder.log``.
    ``gpu_id``: both train on that GPU (spacy train's ``--gpu-id``; -1 = CPU)."""
    output.mkdir(parents=True, exist_ok=True)

    def train_classifier() -> Path:
        print(f"\n== training the function classifier and its vector head ({classifier_steps} steps) ==")
        clf_train, clf_dev = build_classifier_corpus(data, output / "corpus" / "fullpaper")
        clf_overrides = {**training_overrides(clf_train, clf_dev, classifier_steps), **DEMO_CLASSIFIER_SETTINGS,
                         **end_evaluation_overrides(classifier_steps)}
        return train_pipeline(config_path(CLASSIFIER_CONFIG), output / "classifier", clf_overrides,
                              inputs=[clf_train, clf_dev], retrain=retrain, gpu_id=gpu_id, evaluate_at_end=True)

    if not encoder_steps:
        return train_classifier(), None
    if background is None:
        background = (os.cpu_count() or 1) >= 2
    corpus = output / "corpus"
    train_spacy = convert_csabstruct(data.train, corpus / "train.spacy")
    dev_spacy = convert_csabstruct(data.dev, corpus / "dev.spacy")
    encoder_overrides = training_overrides(train_spacy, dev_spacy, encoder_steps)
    # The config's warm-up schedule runs to training.max_steps; keep it short.
    encoder_overrides["training.optimizer.learn_rate.warmup_steps"] = max(1, encoder_steps // 10)
    encoder_config = config_path(ENCODER_CONFIG)
    encoder_job = None
    if background:
        print(f"\n== training the sentence encoder ({encoder_steps} steps) beside the classifier ==")
        encoder_job = BackgroundTraining(encoder_config, output / "encoder", encoder_overrides,
                                         inputs=[train_spacy, dev_spacy], retrain=retrain, log=output / "encoder.log",
                                         gpu_id=gpu_id)
    try:
        classifier = train_classifier()
        if encoder_job is not None:
            print(f"\n== the sentence encoder ({encoder_steps} steps) ==")
            encoder = encoder_job.wait()
        else:
            print(f"\n== training the sentence encoder ({encoder_steps} steps) ==")
            encoder = train_pipeline(encoder_config, output / "encoder", encoder_overrides,
                                     inputs=[train_spacy, dev_spacy], retrain=retrain, gpu_id=gpu_id)
    finally:
        if encoder_job is not None:
            encoder_job.stop()
    return classifier, encoder


# --------------------------------------------------------------------------
# Annotating a paper
# --------------------------------------------------------------------------


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


def read_paper_doc(nlp: Language, paper: Path) -> Doc:
    """One paper file as a Doc with headings (``readers.papers.read_paper``,
    format by content: PDF, GROBID TEI, JATS, S2ORC, plain text)."""
    from ..readers.papers import read_paper

    return read_paper(paper, nlp)


def annotate(nlp: Language, paper: Path, *, n_similar: int = 3, width: int = 100) -> Dict[str, int]:
    """Read ``paper``, run ``nlp`` over it and print it section by section
    (heading and section category of ``rhetoric_section_tagger``), every
    sentence with its function label and score, its phrase label and n-gram,
    and for ``n_similar`` sentences the most similar other sentence."""
    from ..evaluation.fullpaper import is_full_sentence
    from ..extensions import HEADING
    from ..section_headings import token_values

    doc = nlp(read_paper_doc(nlp, paper))
    headings = token_values(doc, HEADING)
    sents, counts = [], {"sentences": 0, "phrase_labeled": 0}
    current: Any = object()
    for sent in doc.sents:
        if not sent.text.strip():
            continue
        heading, section = headings[sent.start], sent._.rhetoric_section
        if (heading, section) != current:
            print(f"\n== {heading or '(no heading)'}  [section: {section or 'unknown'}] ==")
            current = (heading, section)
        sents.append(sent)
        counts["sentences"] += 1
        label, scores = sent._.rhetoric_label, sent._.rhetoric_scores or {}
        shown = f"{label} ({scores.get(label, float('nan')):.2f})" if label is not None else "-"
        print(f"[{len(sents):>3}] {shown:<17} {_short(sent.text, width)}")
        if sent._.phrase_label is not None:
            counts["phrase_labeled"] += 1
            print(f"      phrase: {sent._.phrase_label}  \"{sent._.phrase_match.text}\"")
    # candidates: full sentences (evaluation.fullpaper.is_full_sentence), not the reader's fragments;
    # questions: well-formed ones among them (is_well_formed), spread over the paper
    with_vectors = [i for i, s in enumerate(sents) if s._.rhetoric_vector is not None and is_full_sentence(s.text)]
    queries = [i for i in with_vectors if is_well_formed(sents[i].text)]
    if queries and n_similar > 0:
        print("\n== most similar sentence (sent.similarity, encoder vectors; sentences of 4+ words) ==")
        step = max(1, len(queries) // n_similar)
        for i in queries[::step][:n_similar]:
            j, sim = most_similar([sents[k] for k in with_vectors], with_vectors.index(i))
            if j is None:
                continue
            other = sents[with_vectors[j]]
            print(f"[{i + 1:>3}] {sents[i]._.rhetoric_label or '-':<11} {_short(sents[i].text, width)}")
            print(f"  ~ [{with_vectors[j] + 1:>3}] {other._.rhetoric_label or '-':<11} {_short(other.text, width)}  "
                  f"(cosine {sim:.2f})")
    return counts


_WELL_FORMED = re.compile(r"^[\"'(\[]?[A-Z].*[.?!][\"')\]]?$", re.DOTALL)


def is_well_formed(text: str) -> bool:
    """A sentence that starts with a capital letter and ends with a full
    stop, question or exclamation mark (a closing quote or bracket allowed
    around them): not a line of a formula or a table, or a piece of a
    sentence split by the PDF's layout ("where W is a weight matrix ...",
    "2017, MetaMap Lite) 6 , with ...")."""
    return bool(_WELL_FORMED.match(text.strip()))


def _score(scores: Dict[str, Any], key: str) -> str:
    value = scores.get(key)
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


# --------------------------------------------------------------------------
# The whole demo
# --------------------------------------------------------------------------


def run(paper: Optional[Path] = None, output: Path = Path(".demo"), *,
        classifier_steps: int = DEFAULT_CLASSIFIER_STEPS, encoder_steps: int = DEFAULT_ENCODER_STEPS,
        retrain: bool = False, parser: str = "en_core_web_sm", gpu_id: int = -1) -> Dict[str, int]:
    """Train (or reuse) the two models under ``output``, assemble
    ``output/pipeline``, annotate ``paper`` (default: the GROBID TEI sample of
    the data directory, else the packaged sample paper) and print the dev
    scores. Inputs and outputs (and ``gpu_id``: training, assembly and
    annotation on that GPU, ``util.use_device``; -1 = CPU) are checked before
    any work; returns the counts of ``annotate``."""
    from .. import __version__
    from ..util import use_device

    start = time.perf_counter()
    use_device(gpu_id)
    data = find_data()
    if paper is None:
        paper = data.paper if data.paper is not None else sample_paper()
    paper = check_input(paper, what="paper")
    read_paper_doc(spacy.blank("en"), paper)  # a paper that cannot be read fails now, not after training
    inputs = data.inputs() + [paper]
    check_output(output, what="demo output directory", inputs=inputs, dir_ok=True)
    pipeline_dir = check_pipeline_output(output / "pipeline", inputs=inputs)
    print(f"spacy_rhetoric {__version__}; data from {data.train.parent.parent}; "
          f"configs from {config_path(CLASSIFIER_CONFIG).parent}")

    classifier, encoder = train_demo_models(
        data, output, classifier_steps=classifier_steps, encoder_steps=encoder_steps, retrain=retrain, gpu_id=gpu_id)
    nlp = assemble_demo_pipeline(data, classifier, encoder, pipeline_dir, parser=parser)
    print(f"\npipeline {nlp.pipe_names} -> {pipeline_dir}")

    counts = annotate(nlp, paper)

    clf = dev_scores(classifier)
    print(f"\n{counts['sentences']} sentences of {paper}, {counts['phrase_labeled']} with a phrase label")
    print(f"Quick models, scored by spaCy on the classifier's dev set after training ({classifier_steps} steps):")
    print(f"  classifier F1 micro {_score(clf, 'rhetoric_f_micro')}, macro {_score(clf, 'rhetoric_f_macro')}")
    print(f"  its vectors (by gold label) P@1 {_score(clf, 'rhetoric_vector_p_at_1')}, "
          f"MAP@R {_score(clf, 'rhetoric_vector_map_at_r')}")
    if encoder is not None:
        enc = dev_scores(encoder)
        print(f"  the separate encoder ({encoder_steps} steps, CSAbstruct dev) P@1 {_score(enc, 'encoder_p_at_1')}, "
              f"MAP@R {_score(enc, 'encoder_map_at_r')}")
    print("  (longer training with the configs in configs/ does better; see RESULTS.md)")
    print(f"done in {time.perf_counter() - start:.0f} s")
    return counts
