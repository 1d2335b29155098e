"""``spacy-rhetoric index PIPELINE CORPUS... -o INDEX``: encode every sentence
of a corpus into a searchable faiss index plus a SQLite metadata store
(library: :mod:`spacy_rhetoric.search`, whose docstring describes the index,
the resumable build and the automatic index type).

    spacy-rhetoric index .demo/pipeline corpus/ papers.spacy -o corpus.index [--index-type auto]

Paths and pipeline are checked before the work; an interrupted build resumes
from ``INDEX.tmp-dir`` (``--overwrite`` discards it; Ctrl-C or SIGTERM say how
many parts it keeps); the index appears under INDEX only when complete. A second run on the same INDEX while one is running stops at once.
"""
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from . import app
from .common import PIPELINE_GPU_HELP, guard, nothing_done, positive_int, printable, read_timeout_option


@app.command("index")
def index_cli(
    pipeline: str = typer.Argument(..., help="Trained pipeline (path or package) that sets sentence vectors (an encoder, or a classifier with a vector head)"),
    corpus: List[Path] = typer.Argument(..., help=".spacy, label .jsonl, paper files or folders of papers"),
    output: Path = typer.Option(..., "--output", "-o", help="Index directory to write"),
    index_type: str = typer.Option("auto", "--index-type", help="auto (exact up to 200k vectors, IVF-PQ with exact re-ranking above), "
                                   "flat, hnsw, ivfpq, or a faiss index_factory string"),
    part_sentences: int = typer.Option(2000, "--part-sentences", callback=positive_int,
                                       help="Sentences per resumable part (whole papers)"),
    batch_size: int = typer.Option(16, "--batch-size", callback=positive_int, help="Docs per nlp.pipe batch"),
    n_process: int = typer.Option(1, "--n-process", callback=positive_int, help="Processes for nlp.pipe (single machine; 1 on a GPU)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address, or 'local' "
                                            "for a LocalCluster of --workers processes"),
    workers: int = typer.Option(2, "--workers", callback=positive_int, help="Workers of --scheduler local"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help=PIPELINE_GPU_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard an unfinished build (damaged, or with other "
                                   "settings) and start again"),
    read_timeout: float = read_timeout_option(),
) -> None:
    """Encode every sentence of a corpus into a search index."""
    from ..jobs.interrupts import report_interrupt
    from ..search import build_index
    from ..util import use_device

    with report_interrupt(lambda: _parts_kept(output)), guard("index"):
        use_device(gpu_id)
        summary = build_index(pipeline, corpus, output, index_type=index_type, part_sentences=part_sentences,
                              batch_size=batch_size, n_process=n_process, scheduler=scheduler, workers=workers, overwrite=overwrite,
                              read_timeout=read_timeout)
    if summary.get("files_skipped"):
        msg.warn(f"{summary['files_skipped']} input record(s) skipped", "\n".join(printable(s) for s in summary["skipped"]))
    if not summary.get("finished"):
        nothing_done("the build stopped before the index was written")
    msg.good(f"{summary['n']} sentences of {summary['papers']} papers indexed ({summary['factory']}, "
             f"{summary['dim']}-d) -> {summary['index']}"
             + (f"; resumed, {summary['parts_reused']} parts reused" if summary.get("resumed") else ""))


def _parts_kept(output: Path) -> str:
    """What an interrupted index build leaves: its encoded parts."""
    from ..io import path_text
    from ..search.index import VECTOR_DIR, work_dir

    work = work_dir(output)
    n = len(list((work / VECTOR_DIR).glob("part-*.npy"))) if (work / VECTOR_DIR).is_dir() else 0
    return f"{n} encoded part{'s' if n != 1 else ''} in {path_text(work)}"
