"""``spacy-rhetoric annotate``: run a trained pipeline over papers and write
one JSONL record per sentence (and/or the annotated Docs).

A thin wrapper around :func:`spacy_rhetoric.apps.annotate.annotate_corpus` (see
:mod:`spacy_rhetoric.apps.annotate`: formats, records, sentence boundaries, resume,
Dask). Interrupted (Ctrl-C, SIGTERM), it says what is kept and that the same
command resumes."""
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from . import app
from .common import (
    PIPELINE_GPU_HELP,
    grobid_option,
    grobid_timeout_option,
    guard,
    non_negative_int,
    nothing_done,
    positive_int,
    read_timeout_option,
    report_skipped,
)


def _check_format(value: str) -> str:
    from ..apps.annotate import ANNOTATE_FORMATS

    if value not in ANNOTATE_FORMATS:
        raise typer.BadParameter(f"unknown format {value!r}; choose from: {', '.join(ANNOTATE_FORMATS)}")
    return value


@app.command("annotate")
def annotate_command(
    pipeline: str = typer.Argument(..., help="Trained pipeline: a directory (nlp.to_disk, spacy train output) or an installed package"),
    inputs: List[Path] = typer.Argument(
        ..., help="Paper files or folders (searched recursively, hidden files left out): GROBID TEI, JATS, "
        "S2ORC JSON, text/Markdown, PDF, CL-SciSumm XML (a CL-SciSumm root: its reference papers), .spacy"),
    output: Path = typer.Option(..., "--output", "-o", help="Output directory (annotations.jsonl, annotations.spacy, shards/, summary.json)"),
    fmt: str = typer.Option("auto", "--format", "-f", callback=_check_format,
                            help="Input format: auto (detected per file by content), tei, jats, s2orc, text, pdf, clscisumm or spacy"),
    vectors: bool = typer.Option(False, "--vectors", help="Add each sentence's encoder vector to its record"),
    spacy_out: bool = typer.Option(False, "--spacy", help="Also write the annotated Docs to annotations.spacy"),
    jsonl: bool = typer.Option(True, "--jsonl/--no-jsonl", help="Write annotations.jsonl (--no-jsonl: only --spacy)"),
    n_process: int = typer.Option(1, "--n-process", callback=positive_int, help="Processes for nlp.pipe (single machine; 1 on a GPU)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help=PIPELINE_GPU_HELP),
    batch_size: int = typer.Option(4, "--batch-size", callback=positive_int, help="Papers per nlp.pipe batch"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (tcp://host:port), or 'local' to start a LocalCluster; workers load PIPELINE from the same path"),
    workers: int = typer.Option(2, "--workers", callback=positive_int, help="Worker processes of the LocalCluster (--scheduler local)"),
    limit: int = typer.Option(0, "--limit", callback=non_negative_int, help="Only the first N input files (sorted by path); 0 = all"),
    code: Optional[Path] = typer.Option(None, "--code", help="Python file to import first (custom components), also on Dask workers"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard the shards of an earlier run in OUTPUT instead of resuming"),
    force: bool = typer.Option(False, "--force", help="Replace annotations.jsonl / .spacy / summary.json in OUTPUT that no annotate run wrote"),
    grobid: Optional[str] = grobid_option(),
    grobid_timeout: float = grobid_timeout_option(),
    read_timeout: float = read_timeout_option(),
) -> None:
    """Annotate every sentence of a corpus of papers with a trained pipeline.
    Rerun the same command after an interruption to resume."""
    from ..apps.annotate import AnnotateSettings, annotate_corpus
    from ..jobs.interrupts import finished_shards, report_interrupt
    from ..jobs.settings import SHARD_DIR
    from ..util import use_device

    with report_interrupt(lambda: finished_shards(output / SHARD_DIR)), guard("annotate"):
        use_device(gpu_id)
        settings = AnnotateSettings(
            fmt=fmt, vectors=vectors, spacy=spacy_out, jsonl=jsonl, code=code, n_process=n_process,
            batch_size=batch_size, scheduler=scheduler, workers=workers, limit=limit, overwrite=overwrite,
            force=force, grobid=grobid, grobid_timeout=grobid_timeout, read_timeout=read_timeout,
        )
        summary = annotate_corpus(pipeline, inputs, output, settings, show_progress=True)
    if not summary["sentences"]:
        nothing_done(f"the {summary['papers']} papers read hold no sentences")
    msg.good(
        f"{summary['inputs_annotated']} inputs ({summary['inputs_resumed']} from an earlier run), "
        f"{summary['papers']} papers, {summary['sentences']} sentences -> {', '.join(summary['outputs'].values())}"
    )
    if summary["papers_kept_apart_by_extension"]:
        msg.warn(f"{summary['papers_kept_apart_by_extension']} papers share a name with another file beside them "
                 "(e.g. X.tei.xml and X.json): their paper ids keep the extension, nothing is merged")
    for paper, keys in list(summary["paper_ids_in_several_inputs"].items())[:20]:
        msg.warn(f"paper id {paper!r} is in {len(keys)} inputs ({', '.join(keys[:3])}); "
                 "their records are kept apart by the 'input' field, nothing is merged")
    timing = summary["timing"]
    if timing["sentences_per_second"]:
        msg.info(f"{timing['papers_per_second']:.2f} papers/s, {timing['sentences_per_second']:.0f} sentences/s")
    report_skipped(summary)
