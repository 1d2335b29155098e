"""Distant-supervision corpus builder (the library behind ``spacy-rhetoric label``).

Streams a corpus of papers through the English parser and the
``rhetoric_phrase_labeler`` (paper §3.1-3.2: a sentence inherits the label of a
listed n-gram that contains its dependency root) and writes the labeled
sentences as a de-duplicated, by-paper 4:1 train/validation split.

Design
------
Inputs
    CL-SciSumm reference-paper XMLs (a ``cl-scisumm`` root, a topic root, or
    single ``.xml`` files), plain text (``.txt``: one sentence per non-empty
    line, paper id = file stem), JSON lines (``.jsonl``: one sentence per line,
    ``text``/``sentence`` plus optional ``paper_id``/``doc_id``/``id``,
    ``section``, ``sid``) and ``.spacy`` DocBins (one paper per Doc, sentences
    from the Doc's boundaries). One input file is the unit of work.
Sentence boundaries
    Every source sentence becomes its own ``Doc`` whose tokens all carry a
    preset ``is_sent_start`` (``True`` on the first token, ``False`` on
    every other one), set by the ``rhetoric_single_sentence`` component that
    runs first, so ``nlp.pipe`` is fed plain strings. spaCy's dependency parser treats preset values as hard
    constraints (it may only add boundaries where ``is_sent_start`` is
    ``None``), so each source sentence stays exactly one sentence with one
    root: the parser can neither split it nor merge it with a neighbour.
    Whitespace inside a sentence is collapsed to single spaces.
Streaming and resumability
    All pending inputs flow through one ``nlp.pipe(..., as_tuples=True,
    n_process=..., batch_size=...)`` stream (order is preserved); as soon as
    the last sentence of an input comes out, that input's shard
    (``shards/<name>.jsonl``: a header line with the input's counts, then one
    line per labeled sentence) is written to a temporary file and renamed
    into place. A shard on disk is the done-marker of its input: a restarted
    build skips inputs whose shard exists, so no input is labeled twice and
    none is lost. Memory is bounded by the inputs in flight, not the corpus.
    ``build_config.json`` records the settings; resuming with different
    settings is refused unless ``overwrite`` is given.
Scale-out
    With a Dask scheduler the same per-input work runs as one task per input
    file (the client reads and parses inputs, workers only label sentence
    lists and return the shard content, the client writes the shard), so a
    remote cluster needs neither the corpus nor a shared file system (its
    workers need spacy_rhetoric and the parser package installed, and a
    ``code`` file at the same path). The phrase list travels as a computed
    future, so losing a worker loses no data; Dask re-runs a lost task on
    another worker. Each worker loads the pipeline once.
Merge (deterministic, rerun in full on every build)
    Shards are read in sorted input-key order, sentences in source order.
    De-duplication is by normalised text (Unicode NFKC, case-folded,
    whitespace collapsed); the FIRST copy in that order is kept. The kept
    sentences are split by paper with scikit-learn's ``StratifiedGroupKFold``
    (5 folds, shuffled with ``seed``; groups = paper ids, y = labels): fold 0
    is the validation set, the rest the training set — 4:1 by sentences,
    each paper entirely on one side, label proportions as close to the whole
    set's as the grouping allows. Outputs are written atomically.
"""
import hashlib
import importlib
import importlib.util
import json
import os
import re
import sys
import time
import unicodedata
import warnings
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import srsly
from spacy.language import Language
from spacy.tokens import Doc, DocBin

from . import extensions as ext
from .util import DEFAULT_PARSER, load_parser

LABELER_FACTORY = "rhetoric_phrase_labeler"
SHARD_DIR = "shards"
CONFIG_FILE = "build_config.json"
SUMMARY_FILE = "summary.json"
INPUT_SUFFIXES = (".xml", ".txt", ".jsonl", ".spacy")
# Components of the English pipeline the labeler does not need (lemmas come
# from tagger + attribute_ruler + lemmatizer, the root from the parser).
DEFAULT_EXCLUDE = ("ner",)
PhrasePairs = List[Tuple[str, str]]


class CorpusBuildError(ValueError):
    """A build cannot start or finish (bad arguments, incompatible resume)."""


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class InputFile:
    """One unit of work: a file and its stable key (used for ordering and
    for the shard name)."""

    key: str
    path: Path
    kind: str  # "xml", "txt", "jsonl", "spacy"

    @property
    def shard_name(self) -> str:
        digest = hashlib.sha1(self.key.encode("utf8")).hexdigest()[:12]
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(self.key).stem)[:60]
        return f"{stem}-{digest}.jsonl"


@dataclass
class ReadResult:
    """The sentences of one input, or why it was skipped."""

    sentences: List[Dict[str, Any]] = field(default_factory=list)  # paper_id, section, sid, index, text
    skipped_reason: Optional[str] = None
    n_bad_records: int = 0  # malformed lines inside an otherwise readable input
    n_empty: int = 0  # empty sentences the format reader already left out
    bad_records: List[str] = field(default_factory=list)  # first few reasons


def _kind(path: Path) -> Optional[str]:
    suffix = path.suffix.lower()
    return suffix[1:] if suffix in INPUT_SUFFIXES else None


def _clscisumm_reference_xmls(root: Path) -> List[Path]:
    """Reference XMLs of every CL-SciSumm topic under ``root``."""
    try:
        from .readers.clscisumm import iter_topics
    except ImportError:  # reader not installed: same layout rule, by glob
        return [p for p in _walk_files(root) if p.parent.name == "Reference_XML" and p.suffix == ".xml"]
    return sorted(Path(t.reference_xml) for t in iter_topics(root))


def _walk_files(root: Path) -> List[Path]:
    """Every file below ``root``, following symlinked directories (the
    project's offline asset mirror links the corpus directories)."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        files.extend(Path(dirpath) / name for name in filenames)
    return sorted(files)


def discover_inputs(paths: Sequence[Union[str, Path]], *, limit: int = 0) -> List[InputFile]:
    """Expand the given files/directories into input files, sorted by key.

    A directory that holds CL-SciSumm topics (``*/Reference_XML/*.xml``)
    contributes its reference papers only (citing papers and annotations are
    not part of the distant set); any other directory contributes every
    ``.xml``/``.txt``/``.jsonl``/``.spacy`` file below it. Keys are paths
    relative to the directory given (file name for a file argument).
    """
    found: Dict[str, InputFile] = {}
    for arg in paths:
        arg = Path(arg)
        if arg.is_dir():
            below = _walk_files(arg)
            if any(p.parent.name == "Reference_XML" and p.suffix == ".xml" for p in below):
                files = _clscisumm_reference_xmls(arg)
            else:
                files = [p for p in below if _kind(p)]
            items = [(p.relative_to(arg).as_posix(), p) for p in files]
            if not items:
                raise CorpusBuildError(
                    f"{arg}: directory holds no input files ({', '.join(INPUT_SUFFIXES)} or "
                    "CL-SciSumm */Reference_XML/*.xml)"
                )
        elif arg.is_file():
            if not _kind(arg):
                raise CorpusBuildError(
                    f"{arg}: unsupported input type (expected one of {', '.join(INPUT_SUFFIXES)})"
                )
            items = [(arg.name, arg)]
        else:
            raise CorpusBuildError(f"{arg}: no such file or directory")
        for key, path in items:
            if key in found and found[key].path.resolve() != path.resolve():
                raise CorpusBuildError(
                    f"two inputs have the same key {key!r}: {found[key].path} and {path}; "
                    "pass their common parent directory instead"
                )
            found[key] = InputFile(key=key, path=path, kind=_kind(path))
    inputs = [found[k] for k in sorted(found)]
    return inputs[:limit] if limit and limit > 0 else inputs


def clean_text(text: str) -> str:
    """Collapse runs of whitespace (XML line breaks, tabs) to single spaces."""
    return " ".join(str(text).split())


def normalise_text(text: str) -> str:
    """The de-duplication key: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _sent(paper_id, section, sid, index, text) -> Dict[str, Any]:
    return {
        "paper_id": str(paper_id),
        "section": None if section is None else str(section),
        "sid": None if sid is None else str(sid),
        "index": int(index),
        "text": clean_text(text),
    }


def _read_xml(path: Path) -> ReadResult:
    from .readers.clscisumm import read_reference_xml

    paper = read_reference_xml(path)
    return ReadResult(
        sentences=[
            _sent(paper.paper_id, s.section, s.sid, i, s.text) for i, s in enumerate(paper.sentences)
        ],
        n_empty=int(getattr(paper, "n_empty", 0) or 0),
    )


def _read_txt(path: Path) -> ReadResult:
    lines = path.read_text(encoding="utf8").splitlines()
    texts = [line for line in lines if line.strip()]
    return ReadResult(sentences=[_sent(path.stem, None, None, i, t) for i, t in enumerate(texts)])


def _read_jsonl(path: Path) -> ReadResult:
    result = ReadResult()
    counters: Counter = Counter()
    with path.open(encoding="utf8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError("not a JSON object")
                text = obj.get("text", obj.get("sentence"))
                if not isinstance(text, str):
                    raise ValueError("no string field 'text' or 'sentence'")
            except ValueError as err:
                result.n_bad_records += 1
                if len(result.bad_records) < 5:
                    result.bad_records.append(f"{path}:{lineno}: {err}")
                continue
            paper_id = obj.get("paper_id", obj.get("doc_id", obj.get("id", path.stem)))
            index = counters[str(paper_id)]
            counters[str(paper_id)] += 1
            result.sentences.append(_sent(paper_id, obj.get("section"), obj.get("sid"), index, text))
    return result


def _read_spacy(path: Path) -> ReadResult:
    from spacy.vocab import Vocab

    ext.install_extensions()
    result = ReadResult()
    docbin = DocBin(store_user_data=True).from_disk(path)
    for i, doc in enumerate(docbin.get_docs(Vocab())):
        paper_id = ext.get_doc_value(doc, ext.DOC_ID) or f"{path.stem}:{i}"
        if doc.has_annotation("SENT_START"):
            sents = list(doc.sents)
            sections = ext.get_sent_labels(doc, field=ext.SECTION)
            sids = ext.get_sent_labels(doc, field=ext.SID)
        else:  # no boundaries: the whole Doc is one sentence
            sents, sections, sids = [doc[:]], [None], [None]
        for j, (sent, section, sid) in enumerate(zip(sents, sections, sids)):
            result.sentences.append(_sent(paper_id, section, sid, j, sent.text))
    return result


# kind -> reader(path) -> ReadResult; a reader raises on an unreadable input.
INPUT_READERS: Dict[str, Callable[[Path], ReadResult]] = {
    "xml": _read_xml,
    "txt": _read_txt,
    "jsonl": _read_jsonl,
    "spacy": _read_spacy,
}


def read_input(inp: InputFile) -> ReadResult:
    """Read one input; an unreadable input comes back skipped with its reason
    (file and error), never as an exception."""
    try:
        result = INPUT_READERS[inp.kind](inp.path)
    except (ImportError, ModuleNotFoundError):
        raise
    except Exception as err:  # malformed input: skip and count
        reason = f"{type(err).__name__}: {err}"
        if str(inp.path) not in reason:
            reason = f"{inp.path}: {reason}"
        return ReadResult(skipped_reason=reason)
    if not result.sentences and result.skipped_reason is None:
        result.skipped_reason = f"{inp.path}: no sentences"
    return result


# --------------------------------------------------------------------------
# Pipeline
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelSettings:
    """Everything that determines the labels (recorded in build_config.json)."""

    parser: str = DEFAULT_PARSER
    n: int = 5
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    code: Optional[str] = None  # a Python file to import first (custom functions), like spaCy's --code
    # Phrase segments shorter than n tokens are kept whole when they have at least
    # min_phrase_length tokens; None = n, i.e. only full n-grams (the paper's setting: shorter
    # n-grams "tend to be too generic to convey a specific communicative function").
    min_phrase_length: Optional[int] = None


def import_code(code: Optional[Union[str, Path]]) -> None:
    """Import a Python file (once per process), as spaCy's ``--code`` does."""
    if not code:
        return
    path = Path(code)
    name = "spacy_rhetoric_user_code_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    if name in sys.modules:
        return
    if not path.exists():
        raise CorpusBuildError(f"--code file {path} does not exist")
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def read_phrase_list(phrases: Union[str, Path, Sequence[Tuple[str, str]]]) -> Tuple[PhrasePairs, int]:
    """``(label, phrase)`` pairs and the number of skipped lines."""
    if isinstance(phrases, (str, Path)):
        from .readers.phrases import read_phrases

        pairs, n_skipped = read_phrases(phrases)
        return [(str(a), str(b)) for a, b in pairs], int(n_skipped)
    return [(str(a), str(b)) for a, b in phrases], 0


def phrases_digest(pairs: PhrasePairs) -> str:
    h = hashlib.sha1()
    for label, phrase in pairs:
        h.update(f"{label}\t{phrase}\n".encode("utf8"))
    return h.hexdigest()


def build_nlp(settings: LabelSettings, phrases: PhrasePairs) -> Language:
    """``rhetoric_single_sentence`` + the English parser +
    ``rhetoric_phrase_labeler`` initialized from ``phrases``: every text given
    to the pipeline is one sentence, kept whole."""
    import_code(settings.code)
    ext.install_extensions()
    nlp = load_parser(settings.parser, exclude=list(settings.exclude))
    nlp.add_pipe("rhetoric_single_sentence", first=True)
    min_length = settings.min_phrase_length or settings.n
    labeler = nlp.add_pipe(LABELER_FACTORY, config={
        "n": settings.n, "keep_short": min_length < settings.n, "min_length": min(min_length, settings.n),
    })
    labeler.initialize(nlp=nlp, phrases=list(phrases))
    return nlp


def preset_single_sentence(doc: Doc) -> Doc:
    """Mark ``doc`` as exactly one sentence: the first token starts it, no
    other token may (a parser after this keeps the boundaries)."""
    for i, token in enumerate(doc):
        token.is_sent_start = i == 0
    return doc


@Language.component(
    "rhetoric_single_sentence",
    assigns=["token.is_sent_start"],
)
def single_sentence_component(doc: Doc) -> Doc:
    """Pipeline component: the whole Doc is one sentence whose boundaries
    the parser must keep. Put it first; the corpus builder does, so that
    ``nlp.pipe`` takes plain strings (n_process workers then receive texts,
    not pickled Docs, which carry the whole Vocab)."""
    return preset_single_sentence(doc)


def sentence_doc(nlp: Language, text: str) -> Doc:
    """A Doc for one source sentence whose boundaries the parser must keep."""
    return preset_single_sentence(nlp.make_doc(text))


def labeled_record(doc: Doc, meta: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], int]:
    """The output record for a labeled sentence Doc (None if unlabeled) and
    the Doc's word count (non-space tokens)."""
    n_words = sum(1 for t in doc if not t.is_space)
    sents = list(doc.sents)
    if len(sents) != 1:
        raise RuntimeError(
            f"sentence {meta.get('paper_id')}#{meta.get('index')} came out of the pipeline as "
            f"{len(sents)} sentences; preset sentence boundaries were not respected"
        )
    sent = sents[0]
    label = sent._.phrase_label
    if label is None:
        return None, n_words
    match = sent._.phrase_match
    rec = dict(meta)
    rec["label"] = label
    rec["ngram"] = match.text if match is not None else None
    rec["ngram_start"] = int(match.start) if match is not None else None
    rec["ngram_end"] = int(match.end) if match is not None else None
    return rec, n_words


class _Shard:
    __slots__ = ("inp", "read", "expected", "received", "records", "n_words")

    def __init__(self, inp: InputFile, read: ReadResult):
        self.inp = inp
        self.read = read
        self.expected = 0
        self.received = 0
        self.records: List[Dict[str, Any]] = []
        self.n_words = 0

    def header(self) -> Dict[str, Any]:
        return shard_header(self.inp, self.read, self.expected, self.n_words, len(self.records))


def shard_header(inp: InputFile, read: ReadResult, n_sentences: int, n_words: int, n_labeled: int) -> Dict[str, Any]:
    papers = sorted({s["paper_id"] for s in read.sentences})
    return {
        "input": inp.key,
        "path": str(inp.path),
        "papers": papers,
        "n_source_sentences": len(read.sentences) + read.n_empty,
        "n_sentences": n_sentences,
        "n_empty": len(read.sentences) - n_sentences + read.n_empty,
        "n_words": n_words,
        "n_labeled": n_labeled,
        "n_bad_records": read.n_bad_records,
        "bad_records": read.bad_records,
    }


def label_sentences(nlp: Language, sentences: Sequence[Dict[str, Any]], *, batch_size: int = 256) -> Tuple[List[Dict[str, Any]], int, int]:
    """Label one input's sentences in this process: (records, n_sentences, n_words)."""
    items = [(s["text"], s) for s in sentences if s["text"]]
    records, n_words = [], 0
    for doc, meta in nlp.pipe(items, as_tuples=True, batch_size=batch_size):
        rec, words = labeled_record(doc, meta)
        n_words += words
        if rec is not None:
            records.append(rec)
    return records, len(items), n_words


# --------------------------------------------------------------------------
# Shards
# --------------------------------------------------------------------------


def atomic_write_lines(path: Path, lines: Iterable[Any]) -> None:
    """Write JSON lines to ``path`` via a temporary file and ``os.replace``."""
    tmp = path.with_name(f".tmp-{path.name}.{os.getpid()}")
    with tmp.open("w", encoding="utf8") as fh:
        for obj in lines:
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_shard(shard_dir: Path, inp: InputFile, header: Dict[str, Any], records: List[Dict[str, Any]]) -> Path:
    path = shard_dir / inp.shard_name
    atomic_write_lines(path, [header] + [dict(r, input=inp.key) for r in records])
    return path


def read_shard(path: Path) -> Tuple[Dict[str, Any], Iterator[Dict[str, Any]]]:
    fh = path.open(encoding="utf8")
    header = json.loads(fh.readline())

    def records():
        with fh:
            for line in fh:
                yield json.loads(line)

    return header, records()


# --------------------------------------------------------------------------
# Labeling runners
# --------------------------------------------------------------------------

OnShard = Optional[Callable[[InputFile, Dict[str, Any]], None]]


def _run_local(
    nlp: Language,
    pending: Sequence[InputFile],
    shard_dir: Path,
    skipped: List[Dict[str, str]],
    *,
    n_process: int,
    batch_size: int,
    on_shard: OnShard,
    progress: Any,
) -> Tuple[int, int, float]:
    """One ordered ``nlp.pipe`` stream over all pending inputs; each input's
    shard is written as soon as its last sentence is out. Returns
    (inputs labeled, words, seconds); the time includes reading inputs,
    starting ``n_process`` workers and writing shards, not loading the model."""
    in_flight: "OrderedDict[str, _Shard]" = OrderedDict()
    done = [0, 0]
    start = time.perf_counter()

    def feed() -> Iterator[Tuple[Doc, Tuple[str, Dict[str, Any]]]]:
        for inp in pending:
            read = read_input(inp)
            if read.skipped_reason is not None:
                skipped.append({"input": inp.key, "reason": read.skipped_reason})
                progress.update(1)
                continue
            shard = _Shard(inp, read)
            in_flight[inp.key] = shard
            for s in read.sentences:
                if s["text"]:
                    shard.expected += 1
            for s in read.sentences:
                if s["text"]:
                    yield s["text"], (inp.key, s)

    def flush_complete() -> None:
        while in_flight:
            key, shard = next(iter(in_flight.items()))
            if shard.received < shard.expected:
                return
            in_flight.popitem(last=False)
            header = shard.header()
            write_shard(shard_dir, shard.inp, header, shard.records)
            done[0] += 1
            done[1] += shard.n_words
            progress.update(1)
            if on_shard is not None:
                on_shard(shard.inp, header)

    stream = nlp.pipe(feed(), as_tuples=True, n_process=n_process, batch_size=batch_size)
    for doc, (key, meta) in stream:
        shard = in_flight[key]
        rec, words = labeled_record(doc, meta)
        shard.received += 1
        shard.n_words += words
        if rec is not None:
            shard.records.append(rec)
        flush_complete()
    flush_complete()
    if in_flight:  # pragma: no cover - would mean nlp.pipe dropped documents
        raise RuntimeError(f"inputs left incomplete: {list(in_flight)}")
    return done[0], done[1], time.perf_counter() - start


# Worker-side cache: one pipeline per (settings, phrases) per worker process.
_WORKER_NLP: Dict[str, Language] = {}


def _worker_nlp(settings: LabelSettings, phrases: PhrasePairs) -> Language:
    key = json.dumps(asdict(settings), sort_keys=True) + phrases_digest(phrases)
    if key not in _WORKER_NLP:
        _WORKER_NLP.clear()
        _WORKER_NLP[key] = build_nlp(settings, phrases)
    return _WORKER_NLP[key]


def _identity(value: Any) -> Any:
    return value


def _warm_worker(settings: LabelSettings, phrases: PhrasePairs) -> bool:
    _worker_nlp(settings, phrases)
    return True


def dask_label_task(sentences: List[Dict[str, Any]], settings: LabelSettings, phrases: PhrasePairs, batch_size: int):
    """The per-input Dask task: label the sentences of one input."""
    nlp = _worker_nlp(settings, phrases)
    return label_sentences(nlp, sentences, batch_size=batch_size)


def _import_distributed():
    try:
        import distributed  # noqa: F401
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as err:
        raise CorpusBuildError(
            "--scheduler needs Dask's distributed scheduler, which is not installed. "
            "Install the optional extra: pip install 'spacy_rhetoric[distributed]'"
        ) from err
    return Client, LocalCluster, as_completed


def _run_dask(
    scheduler: str,
    workers: int,
    settings: LabelSettings,
    phrases: PhrasePairs,
    pending: Sequence[InputFile],
    shard_dir: Path,
    skipped: List[Dict[str, str]],
    *,
    batch_size: int,
    on_shard: OnShard,
    progress: Any,
) -> Tuple[int, int, float]:
    """One Dask task per pending input, at most ``2 x workers`` in flight.
    Returns (inputs labeled, words, seconds); every worker loads the pipeline
    before the clock starts (as the model load is outside the local timing)."""
    Client, LocalCluster, as_completed = _import_distributed()
    cluster = None
    if scheduler == "local":
        cluster = LocalCluster(
            n_workers=max(1, workers), threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        client = Client(cluster)
    else:
        client = Client(scheduler)
    done = [0, 0]
    start: Optional[float] = None
    try:
        n_workers = max(1, len(client.scheduler_info().get("workers", {})) or workers)
        max_in_flight = 2 * n_workers
        # A computed (not scattered) future: if the worker holding it dies,
        # the scheduler recomputes it instead of losing it.
        phrases_future = client.submit(
            _identity, list(phrases), key=f"spacy-rhetoric-phrases-{phrases_digest(phrases)}"
        )
        try:  # load the pipeline on every worker before the clock starts
            client.run(_warm_worker, settings, list(phrases))
        except Exception as err:  # a worker lost meanwhile: tasks load it lazily
            warnings.warn(f"warming up the Dask workers failed ({err}); continuing")
        start = time.perf_counter()
        todo = iter(pending)
        futures = as_completed()
        meta: Dict[str, Tuple[InputFile, ReadResult]] = {}

        def submit_next() -> bool:
            for inp in todo:
                read = read_input(inp)
                if read.skipped_reason is not None:
                    skipped.append({"input": inp.key, "reason": read.skipped_reason})
                    progress.update(1)
                    continue
                fut = client.submit(
                    dask_label_task, read.sentences, settings, phrases_future, batch_size,
                    pure=False, key=f"spacy-rhetoric-label-{inp.shard_name}-{time.time_ns()}",
                )
                meta[fut.key] = (inp, read)
                futures.add(fut)
                return True
            return False

        for _ in range(max_in_flight):
            if not submit_next():
                break
        for fut in futures:
            records, n_sentences, n_words = fut.result()
            inp, read = meta.pop(fut.key)
            header = shard_header(inp, read, n_sentences, n_words, len(records))
            write_shard(shard_dir, inp, header, records)
            done[0] += 1
            done[1] += n_words
            progress.update(1)
            if on_shard is not None:
                on_shard(inp, header)
            submit_next()
    finally:
        seconds = time.perf_counter() - start if start is not None else 0.0
        client.close()
        if cluster is not None:
            cluster.close()
    return done[0], done[1], seconds


# --------------------------------------------------------------------------
# Merge: de-duplication, split, outputs
# --------------------------------------------------------------------------


def split_by_paper(
    papers: Sequence[str], labels: Sequence[str], *, seed: int = 0, valid_fraction: float = 0.2
) -> Tuple[set, Dict[str, Any]]:
    """Choose the validation papers: ``StratifiedGroupKFold`` with
    ``round(1 / valid_fraction)`` folds, shuffled with ``seed``; fold 0 is
    validation. Returns (validation paper ids, description)."""
    from sklearn.model_selection import StratifiedGroupKFold

    groups = sorted(set(papers))
    n_splits = max(2, int(round(1.0 / valid_fraction)))
    info = {"method": "sklearn StratifiedGroupKFold", "n_splits": n_splits, "seed": seed, "fold": 0}
    if len(groups) < 2:
        info["note"] = "fewer than 2 papers: everything is training data"
        return set(), info
    if len(groups) < n_splits:
        info["note"] = f"only {len(groups)} papers: {len(groups)} folds instead of {n_splits}"
        n_splits = len(groups)
        info["n_splits"] = n_splits
    X = [[0]] * len(labels)
    if Counter(labels).most_common(1)[0][1] < n_splits:
        # No label has a member per fold (tiny corpora): stratification is
        # impossible, split by paper only.
        from sklearn.model_selection import GroupKFold

        info["method"] = "sklearn GroupKFold (no label has enough sentences to stratify)"
        splitter = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        _, valid_idx = next(iter(splitter.split(X, list(labels), list(papers))))
        return {papers[i] for i in valid_idx}, info
    splitter = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        # "The least populated class in y has only k members": rare labels
        # simply cannot be in every fold.
        warnings.simplefilter("ignore", UserWarning)
        _, valid_idx = next(iter(splitter.split(X, list(labels), list(papers))))
    return {papers[i] for i in valid_idx}, info


def _iter_shard_records(shard_dir: Path, inputs: Sequence[InputFile]) -> Iterator[Dict[str, Any]]:
    for inp in inputs:  # sorted by key
        path = shard_dir / inp.shard_name
        if not path.exists():
            continue
        _, records = read_shard(path)
        yield from records


def _dedup(records: Iterable[Dict[str, Any]], counter: Counter) -> Iterator[Dict[str, Any]]:
    seen = set()
    for rec in records:
        key = hashlib.blake2b(normalise_text(rec["text"]).encode("utf8"), digest_size=16).digest()
        if key in seen:
            counter["duplicates"] += 1
            continue
        seen.add(key)
        yield rec


def record_doc(nlp: Language, rec: Dict[str, Any]) -> Doc:
    """One Doc per labeled sentence, with its gold ``label`` (set_sent_labels),
    evidence n-gram, section, sid and paper id in the doc-level store."""
    doc = sentence_doc(nlp, rec["text"])
    sents = [doc[:]]
    ext.set_sent_labels(doc, [rec["label"]])
    ext.set_span_values(doc, ext.PHRASE_LABEL, sents, [rec["label"]])
    start, end = rec.get("ngram_start"), rec.get("ngram_end")
    if start is not None and end is not None and 0 <= start < end <= len(doc):
        ext.set_span_values(doc, ext.PHRASE_MATCH, sents, [(start, end)])
    if rec.get("section") is not None:
        ext.set_span_values(doc, ext.SECTION, sents, [rec["section"]])
    if rec.get("sid") is not None:
        ext.set_span_values(doc, ext.SID, sents, [rec["sid"]])
    ext.set_doc_value(doc, ext.DOC_ID, rec["paper_id"])
    return doc


def merge_shards(
    out_dir: Path,
    inputs: Sequence[InputFile],
    tokenizer_nlp: Language,
    *,
    seed: int = 0,
    valid_fraction: float = 0.2,
) -> Dict[str, Any]:
    """De-duplicate, split and write train/valid JSONL + .spacy. Two passes
    over the shards; memory holds one hash per kept sentence and its
    (paper, label) pair."""
    shard_dir = out_dir / SHARD_DIR
    counts: Counter = Counter()
    papers: List[str] = []
    labels: List[str] = []
    for rec in _dedup(_iter_shard_records(shard_dir, inputs), counts):
        papers.append(rec["paper_id"])
        labels.append(rec["label"])
    valid_papers, split_info = split_by_paper(papers, labels, seed=seed, valid_fraction=valid_fraction)
    del papers, labels

    outputs = {name: out_dir / f"{name}.jsonl" for name in ("train", "valid")}
    tmp = {name: path.with_name(f".tmp-{path.name}.{os.getpid()}") for name, path in outputs.items()}
    handles = {name: tmp[name].open("w", encoding="utf8") for name in outputs}
    docbins = {name: DocBin(attrs=["ORTH", "SENT_START"], store_user_data=True) for name in outputs}
    per_label = {name: Counter() for name in outputs}
    split_papers = {name: set() for name in outputs}
    try:
        for rec in _dedup(_iter_shard_records(shard_dir, inputs), Counter()):
            name = "valid" if rec["paper_id"] in valid_papers else "train"
            rec = dict(rec, split=name)
            handles[name].write(json.dumps(rec, ensure_ascii=False) + "\n")
            docbins[name].add(record_doc(tokenizer_nlp, rec))
            per_label[name][rec["label"]] += 1
            split_papers[name].add(rec["paper_id"])
    finally:
        for fh in handles.values():
            fh.close()
    for name, path in outputs.items():
        os.replace(tmp[name], path)
        spacy_path = out_dir / f"{name}.spacy"
        spacy_tmp = spacy_path.with_name(f".tmp-{spacy_path.name}.{os.getpid()}")
        spacy_tmp.write_bytes(docbins[name].to_bytes())
        os.replace(spacy_tmp, spacy_path)
    total = per_label["train"] + per_label["valid"]
    return {
        "duplicates_removed": counts["duplicates"],
        "labeled_kept": sum(total.values()),
        "n_labels": len(total),
        "per_label": dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))),
        "split": dict(
            split_info,
            valid_fraction=valid_fraction,
            dedup="normalised text (NFKC, case-folded, whitespace collapsed); first copy in input-key, sentence order kept",
            train_sentences=sum(per_label["train"].values()),
            valid_sentences=sum(per_label["valid"].values()),
            train_papers=len(split_papers["train"]),
            valid_papers=len(split_papers["valid"]),
            per_label_train=dict(sorted(per_label["train"].items())),
            per_label_valid=dict(sorted(per_label["valid"].items())),
        ),
        "outputs": {
            **{f"{n}_jsonl": str(p) for n, p in outputs.items()},
            **{f"{n}_spacy": str(out_dir / f"{n}.spacy") for n in outputs},
        },
    }


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


class _NoProgress:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _check_config(out_dir: Path, config: Dict[str, Any], overwrite: bool) -> None:
    path = out_dir / CONFIG_FILE
    shard_dir = out_dir / SHARD_DIR
    if overwrite and shard_dir.exists():
        for p in shard_dir.iterdir():
            p.unlink()
    elif path.exists():
        old = srsly.read_json(path)
        if old != config:
            diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
            raise CorpusBuildError(
                f"{out_dir} holds a build with different settings ({', '.join(diff)}); "
                "use another output directory or overwrite=True (--overwrite) to start afresh"
            )
    shard_dir.mkdir(parents=True, exist_ok=True)
    for p in shard_dir.glob(".tmp-*"):  # leftovers of a killed run
        p.unlink()
    srsly.write_json(path, config)


def build_corpus(
    inputs: Sequence[Union[str, Path]],
    output_dir: Union[str, Path],
    *,
    phrases: Union[str, Path, Sequence[Tuple[str, str]]],
    parser: str = DEFAULT_PARSER,
    n: int = 5,
    min_phrase_length: Optional[int] = None,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    code: Optional[Union[str, Path]] = None,
    n_process: int = 1,
    batch_size: int = 256,
    scheduler: Optional[str] = None,
    workers: int = 2,
    seed: int = 0,
    valid_fraction: float = 0.2,
    limit: int = 0,
    overwrite: bool = False,
    show_progress: bool = False,
    on_shard: OnShard = None,
    merge_only: bool = False,
) -> Dict[str, Any]:
    """Label a corpus and write the distant-supervision set to ``output_dir``.

    ``scheduler``: None for this machine (``n_process`` worker processes via
    ``nlp.pipe``), ``"local"`` for a Dask LocalCluster of ``workers``
    single-threaded worker processes, or a scheduler address
    (``tcp://host:port``). ``on_shard(input, header)`` is called after each
    shard is written. ``merge_only`` labels nothing and merges the shards
    that exist (a snapshot of an unfinished build; ``inputs_pending`` says
    how many inputs are missing). Returns the summary (also written to
    summary.json).
    """
    out_dir = Path(output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not 0.0 < valid_fraction < 1.0:
        raise CorpusBuildError(f"valid_fraction must be in (0, 1), got {valid_fraction}")
    import_code(code)
    if min_phrase_length is not None and not 1 <= int(min_phrase_length) <= int(n):
        raise CorpusBuildError(f"min_phrase_length must be in 1..n={n}, got {min_phrase_length}")
    min_phrase_length = int(min_phrase_length) if min_phrase_length else int(n)
    settings = LabelSettings(parser=parser, n=int(n), exclude=tuple(exclude), code=str(code) if code else None,
                             min_phrase_length=min_phrase_length)
    pairs, n_phrase_skipped = read_phrase_list(phrases)
    if not pairs:
        raise CorpusBuildError(f"the phrase list {phrases!r} holds no (label, phrase) pairs")
    config = {
        "parser": parser,
        "n": int(n),
        "min_phrase_length": min_phrase_length,
        "exclude": sorted(exclude),
        "phrases_sha1": phrases_digest(pairs),
        "n_phrases": len(pairs),
    }
    _check_config(out_dir, config, overwrite)
    shard_dir = out_dir / SHARD_DIR

    all_inputs = discover_inputs(inputs, limit=limit)
    pending = [inp for inp in all_inputs if not (shard_dir / inp.shard_name).exists()]
    skipped: List[Dict[str, str]] = []
    if show_progress:
        from tqdm import tqdm

        progress = tqdm(total=len(all_inputs), initial=len(all_inputs) - len(pending), unit="file", desc="label")
    else:
        progress = _NoProgress()
    try:
        if not pending or merge_only:
            n_done, n_words, label_seconds = 0, 0, 0.0
        elif scheduler:
            n_done, n_words, label_seconds = _run_dask(
                scheduler, workers, settings, pairs, pending, shard_dir, skipped,
                batch_size=batch_size, on_shard=on_shard, progress=progress,
            )
        else:
            nlp = build_nlp(settings, pairs)
            n_done, n_words, label_seconds = _run_local(
                nlp, pending, shard_dir, skipped,
                n_process=n_process, batch_size=batch_size, on_shard=on_shard, progress=progress,
            )
    finally:
        progress.close()

    totals: Counter = Counter()
    bad_records: List[str] = []
    paper_ids = set()
    n_with_shard = 0
    for inp in all_inputs:
        path = shard_dir / inp.shard_name
        if not path.exists():
            continue
        n_with_shard += 1
        header, _ = read_shard(path)
        for k in ("n_source_sentences", "n_sentences", "n_empty", "n_words", "n_labeled", "n_bad_records"):
            totals[k] += header[k]
        paper_ids.update(header["papers"])
        bad_records.extend(header["bad_records"][: max(0, 20 - len(bad_records))])
    n_pending = len(pending) if merge_only else 0
    if n_with_shard + len(skipped) + n_pending != len(all_inputs):  # pragma: no cover - bookkeeping invariant
        raise RuntimeError("inputs in != inputs labeled + skipped")

    # The parser's own tokenizer (loaded with the pipeline, components unused)
    # re-creates the labeled tokens exactly, so n-gram offsets stay valid.
    tokenizer_nlp = load_parser(parser, exclude=list(exclude))
    merged = merge_shards(out_dir, all_inputs, tokenizer_nlp, seed=seed, valid_fraction=valid_fraction)
    summary = {
        "inputs": len(all_inputs),
        "inputs_labeled": n_with_shard,
        "inputs_labeled_this_run": n_done,
        "inputs_resumed": len(all_inputs) - len(pending),
        "inputs_pending": n_pending,
        "inputs_skipped": len(skipped),
        "skipped": skipped,
        "papers": len(paper_ids),
        "source_sentences": totals["n_source_sentences"],
        "empty_sentences": totals["n_empty"],
        "sentences": totals["n_sentences"],
        "words": totals["n_words"],
        "bad_records": totals["n_bad_records"],
        "bad_record_examples": bad_records,
        "labeled": totals["n_labeled"],
        **merged,
        "phrases": {"pairs": len(pairs), "skipped_lines": n_phrase_skipped, "sha1": config["phrases_sha1"]},
        "settings": {
            "parser": parser, "n": int(n), "min_phrase_length": min_phrase_length,
            "exclude": sorted(exclude), "n_process": n_process,
            "batch_size": batch_size, "scheduler": scheduler, "workers": workers if scheduler else None,
            "seed": seed,
        },
        "timing": {
            "label_seconds": round(label_seconds, 3),
            "words_labeled_this_run": n_words,
            "words_per_second": round(n_words / label_seconds, 1) if n_words and label_seconds > 0 else None,
        },
    }
    srsly.write_json(out_dir / SUMMARY_FILE, summary)
    return summary
