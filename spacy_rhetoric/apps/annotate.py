"""Annotate papers with a trained pipeline (``spacy-rhetoric annotate``).

Runs a pipeline over paper files in any format the paper readers know
(``readers.papers``: GROBID TEI, JATS, S2ORC, text, PDF, CL-SciSumm XML; detected
by content unless ``fmt`` says) and ``.spacy`` DocBins, and writes one JSONL
record per sentence (:func:`sentence_records`) and, with ``spacy=True``, the
annotated Docs.

It is a corpus job (``spacy_rhetoric.jobs``, whose docstring gives the life
cycle): inputs found by ``jobs.discover_inputs`` (one
file is the unit of work, keyed by path, fingerprinted by content; hidden
files and the files of any build are left out; FIFOs, devices, sockets and
unreadable files skipped and counted), one shard per input in
``OUT/shards`` (the done-marker: a rerun after an interruption skips the
inputs whose shard exists, so it ends with the output of an uninterrupted
run, without duplicates), the settings recorded in ``OUT/build_config.json``
(resuming with another pipeline or other options is refused unless
``overwrite``), and the two runners of ``spacy_rhetoric.jobs``: one ordered ``nlp.pipe`` stream
(``n_process``) or one Dask task per input (the client reads the inputs and
sends each as DocBin bytes, workers load the pipeline from its path and
send back records and, with ``spacy``, the annotated DocBin). At the end the
shards are concatenated in input-key order into ``OUT/annotations.jsonl``
(and ``OUT/annotations.spacy``), written atomically, and ``OUT/summary.json``.

Sentence boundaries: every Doc read from a paper has all its sentence starts
preset (the readers' gold ``<s>`` or their sentencizer; a ``.spacy`` Doc gets
the unset ones filled the same way), the pipeline's sentence splitters
(``readers.common.sentence_splitters``) are disabled and a parser keeps
preset boundaries; a Doc whose boundaries changed anyway is an error.
"""
import hashlib
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc, DocBin

from .. import extensions as ext
from ..extensions import docbin_docs
from ..io import atomic_write_json, check_input, check_output, path_text
from ..jobs import dask_tasks, progress_bar, record_skip, stream_inputs
from ..jobs.common import CorpusBuildError
from ..jobs.inputs import InputFile, discover_inputs
from ..jobs.merge import concatenate_shards
from ..jobs.settings import (
    ANNOTATION_FILES,
    SUMMARY_FILE,
    OnShard,
    check_build_dir,
    import_code,
    lock_build,
    prepare_output_dir,
    remove_failed_build,
)
from ..jobs.shards import earlier_shards, read_shard_header, shard_path, write_shard
from ..readers.budget import READ_TIMEOUT
from ..readers.common import ReaderError, sentence_splitters
from ..readers.papers import EXTENSIONS, FORMATS
from ..readers.pdf.grobid import TIMEOUT as GROBID_TIMEOUT
from .records import RECORD_FIELDS, doc_records  # noqa: F401 - RECORD_FIELDS: the records' fields, re-exported

PathLike = Union[str, Path]
ANNOTATE_FORMATS = ("auto",) + FORMATS + ("spacy",)
JSONL_FILE, SPACY_FILE = ANNOTATION_FILES


@dataclass(frozen=True)
class AnnotateSettings:
    """The options of an annotate run (``spacy-rhetoric annotate``'s).

    What determines the output, recorded in build_config.json with the
    pipeline's content hash (resuming with others is refused): ``fmt`` (input
    format, ``ANNOTATE_FORMATS``), ``vectors`` (each sentence's vector in its
    record), ``spacy`` (also write the annotated Docs), ``grobid`` (a GROBID
    server's URL that PDFs are sent to). What is written: ``jsonl``
    (``annotations.jsonl``). ``code``: a Python file imported first (custom
    components), on Dask workers too. How it runs: ``n_process`` processes
    of one ``nlp.pipe`` stream, ``batch_size`` Docs (papers) per batch,
    ``scheduler`` (None: this machine; ``"local"``: a Dask LocalCluster of
    ``workers`` processes; else a scheduler address), ``limit`` (only the
    first N input files, 0 = all), ``overwrite`` (discard an earlier run's
    shards instead of resuming), ``force`` (replace annotation files that no
    build wrote). How papers are read: ``grobid_timeout`` seconds a GROBID
    request, ``read_timeout`` seconds a paper file (``readers.budget``)."""

    fmt: str = "auto"
    vectors: bool = False
    spacy: bool = False
    jsonl: bool = True
    code: Optional[PathLike] = None
    n_process: int = 1
    batch_size: int = 4
    scheduler: Optional[str] = None
    workers: int = 2
    limit: int = 0
    overwrite: bool = False
    force: bool = False
    grobid: Optional[str] = None
    grobid_timeout: float = GROBID_TIMEOUT
    read_timeout: Optional[float] = READ_TIMEOUT


# -- inputs ------------------------------------------------------------------------------------

def kind_of(fmt: str) -> Callable[[Path], Optional[str]]:
    """The input kind of a file for ``fmt``: ``"spacy"`` for a DocBin,
    ``fmt`` for a file with one of its extensions (``"auto"``: any file,
    detected by content when read), else None (not an input)."""

    def kind(path: Path) -> Optional[str]:
        if path.suffix.lower() == ".spacy":
            return "spacy" if fmt in ("auto", "spacy") else None
        if fmt == "auto":
            return "auto"
        if fmt != "spacy" and path.name.lower().endswith(tuple(EXTENSIONS[fmt])):
            return fmt
        return None

    return kind


def expected_files(fmt: str) -> str:
    if fmt == "auto":
        return "any paper file or .spacy"
    return ", ".join(EXTENSIONS.get(fmt, (".spacy",))) + f" ({fmt})"


def read_docs(inp: InputFile, nlp: Language, doc_id: Optional[str] = None,
              grobid: Optional[str] = None, **reading) -> List[Doc]:
    """The Docs of one input in ``nlp``'s vocab, every sentence start preset.
    ``doc_id``: the paper's id (``readers.papers.paper_ids``; a DocBin's Docs
    without an id get ``<doc_id>:<i>``). ``grobid``: a GROBID server's URL
    that PDFs are sent to; ``reading``: ``grobid_timeout``, ``read_timeout``
    of ``readers.papers.read_paper``. Raises ReaderError/OSError for an
    unusable input (a paper past its read timeout too)."""
    from ..readers.fulltext import sentence_splitter
    from ..readers.papers import read_paper

    if doc_id is None:
        doc_id = inp.path.stem
    if inp.kind != "spacy":
        return [read_paper(inp.path, nlp, fmt=inp.kind, doc_id=doc_id, grobid=grobid, **reading)]
    doc_id = doc_id[:-len(".spacy")] if doc_id.lower().endswith(".spacy") else doc_id
    try:
        docs = list(docbin_docs(DocBin(store_user_data=True).from_disk(inp.path), nlp.vocab))
    except Exception as err:  # noqa: BLE001 - name the file
        raise ReaderError(inp.path, None, f"cannot read as a .spacy DocBin: {err}") from err
    docs = [doc for doc in docs if len(doc)]
    if not docs:
        raise ReaderError(inp.path, None, "no (non-empty) Docs in the DocBin")
    fill = sentence_splitter("sentencizer")
    for i, doc in enumerate(docs):
        fill(doc)
        if ext.get_doc_value(doc, ext.DOC_ID) is None:
            ext.set_doc_value(doc, ext.DOC_ID, f"{doc_id}:{i}")
    return docs


def _read(inp: InputFile, nlp: Language, skipped: List[Dict[str, str]], progress: Any,
          doc_id: Optional[str] = None, grobid: Optional[str] = None,
          reading: Optional[Dict[str, Any]] = None) -> Optional[List[Doc]]:
    """``read_docs``, or None with the reason recorded (skip and count)."""
    try:
        return read_docs(inp, nlp, doc_id, grobid, **(reading or {}))
    except (ReaderError, OSError, UnicodeDecodeError) as err:
        where = path_text(inp.path)
        reason = str(err) if where in str(err) else f"{where}: {type(err).__name__}: {err}"
    record_skip(skipped, inp.key, reason, progress)
    return None


# -- records -----------------------------------------------------------------------------------

def sentence_records(doc: Doc, *, vectors: bool = False) -> List[Dict[str, Any]]:
    """One record per sentence of an annotated Doc (``RECORD_FIELDS``):
    char offsets into ``doc.text`` (``doc.text[start_char:end_char] ==
    text``), the classifier's label and scores, the fine classifier's, the
    phrase labeler's label and evidence n-gram; None where a component is
    absent or gave nothing (whitespace-only sentences). The written records
    also carry ``input``, the key (path relative to the folder given) of the
    file the paper came from; paper ids are unique in the corpus
    (``readers.papers.paper_ids``). Built by ``records.doc_records``."""
    records = doc_records(doc, vector=vectors)
    if vectors:
        for rec in records:
            rec["vector"] = rec["vector"].tolist() if rec["vector"] is not None else None
    return records


def sentence_starts(doc: Doc) -> List[int]:
    return [sent.start for sent in doc.sents] if len(doc) else []


def doc_result(doc: Doc, starts: List[int], settings: AnnotateSettings) -> Tuple[List[Dict[str, Any]], int, Optional[Doc]]:
    """(records, words, the Doc if it is kept) of one annotated Doc; an error
    if the pipeline moved its preset sentence boundaries."""
    after = sentence_starts(doc)
    if after != starts:
        raise CorpusBuildError(
            f"paper {ext.get_doc_value(doc, ext.DOC_ID)}: the pipeline changed its preset sentence boundaries "
            f"({len(starts)} -> {len(after)} sentences); a component re-splits sentences "
            "(only sentencizer/senter are disabled; a parser keeps preset boundaries)"
        )
    n_words = sum(1 for token in doc if not token.is_space)
    return sentence_records(doc, vectors=settings.vectors), n_words, doc if settings.spacy else None


def docbin_bytes(docs: Sequence[Doc]) -> bytes:
    return DocBin(store_user_data=True, docs=docs).to_bytes()


def annotate_docs(nlp: Language, docs: Sequence[Doc], settings: AnnotateSettings,
                  batch_size: int) -> Tuple[List[Dict[str, Any]], int, Optional[bytes]]:
    """Annotate the Docs of one input in this process: (records, words,
    DocBin bytes of the annotated Docs if ``settings.spacy``)."""
    from ..long_docs import process_long_doc

    starts = [sentence_starts(doc) for doc in docs]
    short = [doc for doc in docs if not is_long(nlp, doc)]
    done = iter(nlp.pipe(short, batch_size=batch_size, disable=sentence_splitters(nlp)))
    results = [doc_result(process_long_doc(nlp, doc, disable=sentence_splitters(nlp)) if is_long(nlp, doc)
                          else next(done), s, settings) for doc, s in zip(docs, starts)]
    return _combine(results, settings)


def is_long(nlp: Language, doc: Doc) -> bool:
    """A paper longer than ``long_docs.long_threshold`` (100,000 characters,
    or ``nlp.max_length`` where lower): annotated in pieces of whole
    sentences (``long_docs.process_long_doc``), in this process."""
    from ..long_docs import is_long_doc

    return is_long_doc(nlp, doc)


def _combine(results, settings: AnnotateSettings) -> Tuple[List[Dict[str, Any]], int, Optional[bytes]]:
    records = [rec for recs, _, _ in results for rec in recs]
    n_words = sum(words for _, words, _ in results)
    return records, n_words, docbin_bytes([doc for _, _, doc in results]) if settings.spacy else None


# -- the pipeline ------------------------------------------------------------------------------

def load_pipeline(pipeline: PathLike, code: Optional[PathLike] = None) -> Language:
    """``spacy.load`` (a path or an installed package) with a clear error."""
    import spacy

    import_code(code)
    ext.install_extensions()
    try:
        return spacy.load(pipeline)
    except (OSError, IOError, ValueError) as err:
        raise CorpusBuildError(f"cannot load pipeline {str(pipeline)!r}: {err}") from err


def pipeline_digest(pipeline: PathLike) -> str:
    """sha1 of every file of a pipeline directory (path and bytes), so a
    retrained pipeline at the same path is a new build; for a package name,
    the name and installed version."""
    path = Path(pipeline)
    h = hashlib.sha1()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(file.relative_to(path).as_posix().encode("utf8") + b"\0")
            with file.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    else:
        from importlib.metadata import PackageNotFoundError, version

        try:
            h.update(f"{pipeline}=={version(str(pipeline))}".encode("utf8"))
        except PackageNotFoundError:
            h.update(str(pipeline).encode("utf8"))
    return h.hexdigest()


def annotate_docbin(nlp: Language, docs: bytes, settings: AnnotateSettings, batch_size: int):
    """A Dask task's work (``jobs.dask_tasks``): annotate the Docs of one
    input (DocBin bytes) with the worker's pipeline."""
    return annotate_docs(nlp, list(docbin_docs(DocBin(store_user_data=True).from_bytes(docs), nlp.vocab)),
                         settings, batch_size)


# -- the run -----------------------------------------------------------------------------------

def output_paths(out_dir: Path) -> Dict[str, Path]:
    return {"JSONL output": out_dir / JSONL_FILE, ".spacy output": out_dir / SPACY_FILE}


def check_annotate_args(pipeline: PathLike, inputs: Sequence[PathLike], out_dir: Path,
                        settings: AnnotateSettings) -> None:
    """Every argument and path, checked before any work (``PathError`` or
    ``CorpusBuildError`` naming what is wrong)."""
    if not inputs:
        raise CorpusBuildError("no inputs given")
    if settings.fmt not in ANNOTATE_FORMATS:
        raise CorpusBuildError(f"format must be one of {', '.join(ANNOTATE_FORMATS)}, got {settings.fmt!r}")
    if not (settings.jsonl or settings.spacy):
        raise CorpusBuildError("nothing to write: neither the JSONL output nor --spacy asked for")
    for path in inputs:
        check_input(path, what="input", dir_ok=True)
    if Path(pipeline).exists():
        check_input(pipeline, what="pipeline", dir_ok=True, file_ok=False)
    # an output folder inside a corpus folder is allowed (its files are never read back), not
    # inside the pipeline
    check_output(out_dir, what="output directory", inputs=[*inputs, pipeline], dir_ok=True, inside_ok=inputs)
    for what, path in output_paths(out_dir).items():
        if path.is_dir():
            raise CorpusBuildError(f"{what} {path} is an existing directory, expected a file path")
    check_build_dir(out_dir, [*ANNOTATION_FILES, SUMMARY_FILE], settings.force)
    if settings.code:
        check_input(settings.code, what="--code file")
    for name in ("n_process", "batch_size", "workers"):
        if int(getattr(settings, name)) < 1:
            raise CorpusBuildError(f"{name} must be at least 1, got {getattr(settings, name)}")


def annotate_corpus(pipeline: PathLike, inputs: Sequence[PathLike], output_dir: PathLike,
                    settings: AnnotateSettings = AnnotateSettings(), *, show_progress: bool = False,
                    on_shard: OnShard = None) -> Dict[str, Any]:
    """Annotate the papers under ``inputs`` with ``pipeline`` (a directory or
    an installed package; Dask workers load it from the same path) into
    ``output_dir`` (``annotations.jsonl`` unless ``settings.jsonl`` is off,
    ``annotations.spacy`` with ``settings.spacy``, ``summary.json``), with
    the options of ``settings`` (:class:`AnnotateSettings`); rerun to
    resume. ``show_progress``: a progress bar. ``on_shard(input, header)`` is
    called after each shard is written. A paper past its read timeout is
    skipped and counted. Raises ``CorpusBuildError`` when no input is usable
    (an output directory this run made is then removed). Returns the
    summary."""
    out_dir = Path(output_dir)
    check_annotate_args(pipeline, inputs, out_dir, settings)
    pipeline_arg = str(Path(pipeline).absolute()) if Path(pipeline).exists() else str(pipeline)
    settings = replace(settings, vectors=bool(settings.vectors), spacy=bool(settings.spacy),
                       code=str(Path(settings.code).absolute()) if settings.code else None)
    fmt, batch_size, scheduler, grobid = settings.fmt, settings.batch_size, settings.scheduler, settings.grobid
    nlp = load_pipeline(pipeline_arg, settings.code)
    unreadable: List[Dict[str, str]] = []  # skipped and counted: never opened (FIFOs, ...) or unopenable
    all_inputs = discover_inputs(inputs, limit=settings.limit, exclude=[out_dir], kind_of=kind_of(fmt),
                                 expected=expected_files(fmt), skip_hidden=True, skipped=unreadable)
    from ..readers.papers import paper_ids, same_name_papers

    ids = paper_ids([inp.key for inp in all_inputs])
    config = {"command": "annotate", "pipeline": pipeline_arg, "pipeline_sha1": pipeline_digest(pipeline),
              "format": fmt, "vectors": settings.vectors, "spacy": settings.spacy}
    if grobid:
        config["grobid"] = grobid
    reading = {"grobid_timeout": settings.grobid_timeout, "read_timeout": settings.read_timeout}  # not part of the build's identity
    created = not out_dir.exists()
    with lock_build(out_dir):  # one run at a time on an output folder
        shard_dir = prepare_output_dir(out_dir, config, settings.overwrite)
        pending = [inp for inp in all_inputs if not shard_path(shard_dir, inp).exists()]
        earlier = earlier_shards(shard_dir)  # the shard folder listed once, not once per input
        skipped: List[Dict[str, str]] = list(unreadable)
        done = {"inputs": 0, "papers": 0, "sentences": 0, "words": 0}

        def finish(inp: InputFile, docs: List[Doc], result) -> None:
            records, n_words, docs_bytes = result
            header = {"input": inp.key, "path": path_text(inp.path), "sha1": inp.fingerprint,
                      "papers": [ext.get_doc_value(doc, ext.DOC_ID) for doc in docs],
                      "n_sentences": len(records), "n_words": n_words}
            write_shard(shard_dir, inp, header, records, docs=docs_bytes, earlier=earlier.get(inp.shard_prefix, ()))
            for key, n in (("inputs", 1), ("papers", len(docs)), ("sentences", len(records)), ("words", n_words)):
                done[key] += n
            progress.update(1)
            if on_shard is not None:
                on_shard(inp, header)

        progress = progress_bar(show_progress, total=len(all_inputs), initial=len(all_inputs) - len(pending),
                                desc="annotate")
        start = time.perf_counter()
        try:
            if pending and scheduler:
                seconds = dask_tasks(
                    scheduler, settings.workers, pending,
                    pipeline=(load_pipeline, (pipeline_arg, settings.code)),
                    read=lambda inp: _read(inp, nlp, skipped, progress, ids[inp.key], grobid, reading),
                    work=annotate_docbin,
                    work_args=lambda inp, docs: (docbin_bytes(docs), settings, batch_size),
                    finish=finish, name="annotate",
                )
            elif pending:
                from ..long_docs import process_long_doc

                def read(inp: InputFile):
                    docs = _read(inp, nlp, skipped, progress, ids[inp.key], grobid, reading)
                    if docs is None:
                        return None
                    # a paper longer than nlp.max_length is annotated here, in pieces (long_docs)
                    long_done = {i: doc_result(process_long_doc(nlp, doc, disable=sentence_splitters(nlp)),
                                               sentence_starts(doc), settings)
                                 for i, doc in enumerate(docs) if is_long(nlp, doc)}
                    return ((docs, long_done),
                            [(doc, sentence_starts(doc)) for i, doc in enumerate(docs) if i not in long_done])

                def finish_stream(inp: InputFile, payload, results) -> None:
                    docs, long_done = payload
                    rest = iter(results)
                    ordered = [long_done[i] if i in long_done else next(rest) for i in range(len(docs))]
                    finish(inp, docs, _combine(ordered, settings))

                stream_inputs(nlp, pending, read=read, process=lambda doc, starts: doc_result(doc, starts, settings),
                              finish=finish_stream,
                              n_process=settings.n_process, batch_size=batch_size, disable=sentence_splitters(nlp),
                              # one paper per input but in a .spacy: no more processes than papers
                              max_processes=None if any(i.kind == "spacy" for i in pending) else len(pending))
                seconds = time.perf_counter() - start
            else:
                seconds = 0.0
        finally:
            progress.close()

        done_inputs = [inp for inp in all_inputs if shard_path(shard_dir, inp).exists()]
        n_inputs = len(all_inputs) + len(unreadable)
        if len(done_inputs) + len(skipped) != n_inputs:  # pragma: no cover - bookkeeping invariant
            raise RuntimeError("inputs in != inputs annotated + skipped")
        if not done_inputs:
            remove_failed_build(out_dir, created)
            raise CorpusBuildError(f"none of the {n_inputs} inputs is usable"
                                   + (f" (e.g. {skipped[0]['reason']})" if skipped else ""))
        headers = [read_shard_header(shard_path(shard_dir, inp)) for inp in done_inputs]
        inputs_of: Dict[str, List[str]] = {}
        for header in headers:
            for paper in header["papers"]:
                inputs_of.setdefault(str(paper), []).append(header["input"])
        shared_ids = {paper: keys for paper, keys in inputs_of.items() if len(keys) > 1}
        outputs = concatenate_shards(shard_dir, done_inputs, jsonl=out_dir / JSONL_FILE if settings.jsonl else None,
                                     spacy=out_dir / SPACY_FILE if settings.spacy else None)
        summary = {
            "inputs": n_inputs,
            "inputs_annotated": len(done_inputs),
            "inputs_annotated_this_run": done["inputs"],
            "inputs_resumed": len(all_inputs) - len(pending),
            "inputs_skipped": len(skipped),
            "skipped": skipped,
            "papers": sum(len(h["papers"]) for h in headers),
            # ids a .spacy input gave to Docs of two inputs: their records stay apart by "input"
            "paper_ids_in_several_inputs": shared_ids,
            "papers_kept_apart_by_extension": same_name_papers({inp.key: ids[inp.key] for inp in all_inputs}),
            "sentences": sum(h["n_sentences"] for h in headers),
            "words": sum(h["n_words"] for h in headers),
            "outputs": outputs,
            "settings": {**config, "n_process": settings.n_process, "batch_size": batch_size,
                         "scheduler": scheduler, "workers": settings.workers if scheduler else None},
            "timing": {
                "seconds": round(seconds, 3), "papers_this_run": done["papers"],
                "sentences_this_run": done["sentences"],
                "papers_per_second": round(done["papers"] / seconds, 3) if done["papers"] and seconds > 0 else None,
                "sentences_per_second": round(done["sentences"] / seconds, 1) if done["sentences"] and seconds > 0
                else None,
            },
        }
        atomic_write_json(out_dir / "summary.json", summary)
        return summary

