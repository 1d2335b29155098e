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
``overwrite``), and the runners of ``spacy_rhetoric.jobs``: one ordered ``nlp.pipe`` stream
(one process, or ``n_process`` over the Docs of ``.spacy`` inputs), one task
per input in ``n_process`` forked worker processes over paper files
(``jobs.pool_inputs``: the worker reads the paper, annotates it and writes
its shard; each takes the next input when it is done), or one Dask task per
input (the client reads the inputs and sends each as DocBin bytes, workers
load the pipeline from its path and send back records and, with ``spacy``,
the annotated DocBin). What is done with one input's Docs:
``annotate_input``. At the end the
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
from ..jobs import bounded_processes, can_fork, dask_tasks, pool_inputs, progress_bar, record_skip
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
from ..readers.common import ReaderError
from ..readers.papers import EXTENSIONS, FORMATS
from ..readers.pdf.grobid import TIMEOUT as GROBID_TIMEOUT
from .annotate_input import (
    annotate_docbin,
    annotate_docs,
    annotate_stream,
    docbin_bytes,
    sentence_records,  # noqa: F401 - the records of one Doc, as annotate writes them
)
from .records import RECORD_FIELDS  # noqa: F401 - the records' fields, re-exported

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
    components), on Dask workers too. How it runs: ``n_process`` worker
    processes (one task per paper file, :func:`use_pool`; the Docs of
    ``.spacy`` inputs: one ``nlp.pipe`` stream), ``batch_size`` Docs
    (papers) per batch,
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
    docs, reason = read_or_reason(inp, nlp, doc_id, grobid, reading)
    if docs is None:
        record_skip(skipped, inp.key, reason, progress)
    return docs


def read_or_reason(inp: InputFile, nlp: Language, doc_id: Optional[str] = None, grobid: Optional[str] = None,
                   reading: Optional[Dict[str, Any]] = None) -> Tuple[Optional[List[Doc]], str]:
    """``(read_docs(...), "")``, or ``(None, why the input is skipped)``."""
    try:
        return read_docs(inp, nlp, doc_id, grobid, **(reading or {})), ""
    except (ReaderError, OSError, UnicodeDecodeError) as err:
        where = path_text(inp.path)
        return None, str(err) if where in str(err) else f"{where}: {type(err).__name__}: {err}"


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


# -- the run -----------------------------------------------------------------------------------

def use_pool(settings: AnnotateSettings, pending: Sequence[InputFile]) -> bool:
    """Whether the pending inputs go to forked worker processes one input a
    task (``jobs.pool_inputs``) rather than through one ``nlp.pipe``
    stream: with ``n_process`` above 1 on a machine that forks and has two
    CPUs or more for this process, the pipeline on the CPU (on a GPU it runs
    in one process), when every input is a paper file (the Docs of one
    ``.spacy`` input are spread over the stream's processes instead) and
    there are at least two of them."""
    from ..jobs.local import usable_cpus
    from ..util import pipeline_gpu

    return (settings.n_process > 1 and len(pending) > 1 and usable_cpus() > 1 and pipeline_gpu() < 0
            and can_fork() and not any(inp.kind == "spacy" for inp in pending))


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

        def write(inp: InputFile, docs: List[Doc], result) -> Dict[str, Any]:
            """The input's shard written (here or in a worker); its header."""
            records, n_words, docs_bytes = result
            header = {"input": inp.key, "path": path_text(inp.path), "sha1": inp.fingerprint,
                      "papers": [ext.get_doc_value(doc, ext.DOC_ID) for doc in docs],
                      "n_sentences": len(records), "n_words": n_words}
            write_shard(shard_dir, inp, header, records, docs=docs_bytes, earlier=earlier.get(inp.shard_prefix, ()))
            return header

        def count(inp: InputFile, header: Dict[str, Any]) -> None:
            for key, n in (("inputs", 1), ("papers", len(header["papers"])), ("sentences", header["n_sentences"]),
                           ("words", header["n_words"])):
                done[key] += n
            progress.update(1)
            if on_shard is not None:
                on_shard(inp, header)

        def finish(inp: InputFile, docs: List[Doc], result) -> None:
            count(inp, write(inp, docs, result))

        def work(inp: InputFile) -> Tuple[Optional[Dict[str, Any]], str]:
            """One input read, annotated and its shard written, in a worker
            process: (its header, "") or (None, why it is skipped)."""
            docs, reason = read_or_reason(inp, nlp, ids[inp.key], grobid, reading)
            if docs is None:
                return None, reason
            return write(inp, docs, annotate_docs(nlp, docs, settings, batch_size)), ""

        def finish_work(inp: InputFile, result: Tuple[Optional[Dict[str, Any]], str]) -> None:
            header, reason = result
            if header is None:
                record_skip(skipped, inp.key, reason, progress)
            else:
                count(inp, header)

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
            elif pending and use_pool(settings, pending):
                pool_inputs(pending, work=work, finish=finish_work,
                            n_process=bounded_processes(settings.n_process, len(pending)))
                seconds = time.perf_counter() - start
            elif pending:
                annotate_stream(nlp, pending, settings,
                                read=lambda inp: _read(inp, nlp, skipped, progress, ids[inp.key], grobid, reading),
                                finish=finish)
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

