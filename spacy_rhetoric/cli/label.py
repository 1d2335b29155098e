"""``spacy-rhetoric label``: build the distant-supervision sentence set.

A thin wrapper around :func:`spacy_rhetoric.corpus_builder.build_corpus` (see
:mod:`spacy_rhetoric.corpus_builder` for the design: sentence boundaries,
de-duplication, the by-paper split; and :mod:`spacy_rhetoric.jobs` for inputs,
shards and resume, Dask scale-out). Interrupted (Ctrl-C, SIGTERM), it says
what is kept and that the same command resumes.
"""
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from . import app
from .common import (
    PIPELINE_GPU_HELP,
    fail,
    guard,
    non_negative_int,
    nothing_done,
    positive_int,
    printable,
    report_skipped,
)


def default_phrases() -> Path:
    """The Iwatsuki CL phrase database of the data directory
    (``$SPACY_RHETORIC_DATA``, or ``../shared/data`` next to the repository:
    ``spacy_rhetoric.apps.demo.data_dir``), whatever the current directory."""
    from ..apps.demo import PHRASES_DIR, data_dir

    return data_dir().absolute() / PHRASES_DIR


@app.command("label")
def label_command(
    inputs: List[Path] = typer.Argument(
        ..., help="Input files or directories: a CL-SciSumm root or topic dir (reference-paper XMLs), "
        ".xml, .txt (one sentence per line), .jsonl (one sentence per line: text, paper_id, section, sid) "
        "or .spacy files. The files a label build writes (shards, train/valid, summary) are never read",
    ),
    output: Path = typer.Option(..., "--output", "-o", help="Output directory (shards, train/valid .jsonl and .spacy, summary.json)"),
    phrases: Optional[Path] = typer.Option(
        None, "--phrases", "-p", show_default=False,
        help="Labeled phrase list: label<TAB>phrase[<TAB>count] file, a directory of them, or CFS3 "
             "5gram_dict.json (default: iwatsuki2021-fe-database-cl in $SPACY_RHETORIC_DATA, "
             "else ../shared/data next to the repository)"),
    n: int = typer.Option(5, "--n", callback=positive_int, help="n-gram length of the phrase labeler"),
    min_phrase_length: Optional[int] = typer.Option(
        None, "--min-phrase-length", callback=positive_int,
        help="Keep phrases shorter than n whole if they have at least this many tokens "
             "(default: n, i.e. only full n-grams, as in the paper)"),
    parser: str = typer.Option("en_core_web_sm", "--parser", help="English pipeline with tagger, lemmatizer and parser"),
    n_process: int = typer.Option(1, "--n-process", callback=positive_int, help="Processes for nlp.pipe (single machine; 1 on a GPU)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help=PIPELINE_GPU_HELP),
    batch_size: int = typer.Option(256, "--batch-size", callback=positive_int, help="Sentences per nlp.pipe batch"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (tcp://host:port), or 'local' to start a LocalCluster"),
    workers: int = typer.Option(2, "--workers", callback=positive_int, help="Worker processes of the LocalCluster (--scheduler local)"),
    seed: int = typer.Option(0, "--seed", help="Seed of the train/validation split"),
    valid_fraction: float = typer.Option(0.2, "--valid-fraction", help="Share of the papers in validation"),
    limit: int = typer.Option(0, "--limit", callback=non_negative_int, help="Use only the first N input files (sorted by key); 0 = all"),
    code: Optional[Path] = typer.Option(None, "--code", help="Python file to import first (custom components), also on Dask workers"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard shards of an earlier build in OUTPUT instead of resuming"),
    merge_only: bool = typer.Option(False, "--merge-only", help="Label nothing: merge the shards that exist (snapshot of an unfinished build)"),
    force: bool = typer.Option(False, "--force", help="Replace train/valid/summary files in OUTPUT that no label run wrote"),
) -> None:
    """Label the sentences of a corpus with the phrase-n-gram root labeler and
    write a de-duplicated, by-paper train/validation split. Rerun the same
    command after an interruption to resume."""
    from ..corpus_builder import BuildSettings, build_corpus
    from ..jobs.interrupts import finished_shards, report_interrupt
    from ..jobs.settings import SHARD_DIR
    from ..util import use_device

    with guard("label"):
        use_device(gpu_id)
    if phrases is None:
        phrases = default_phrases()
        if not phrases.exists():
            fail(f"no --phrases given and the default phrase list {phrases} does not exist: "
                 "pass --phrases FILE|DIR or set SPACY_RHETORIC_DATA to the data directory")
    with report_interrupt(lambda: finished_shards(output / SHARD_DIR)), guard("label"):
        settings = BuildSettings(
            parser=parser, n=n, min_phrase_length=min_phrase_length, code=code, n_process=n_process,
            batch_size=batch_size, scheduler=scheduler, workers=workers, seed=seed, valid_fraction=valid_fraction,
            limit=limit, overwrite=overwrite, merge_only=merge_only, force=force,
        )
        summary = build_corpus(inputs, output, phrases, settings, show_progress=True)
    if not summary["labeled_kept"]:
        nothing_done(f"no sentence of the {summary['sentences']} read matched a phrase n-gram; "
                     f"{output}/train.jsonl and valid.jsonl are empty")
    split = summary["split"]
    msg.good(
        f"{summary['inputs_labeled']} inputs ({summary['inputs_resumed']} from an earlier run), "
        f"{summary['papers']} papers, {summary['sentences']} sentences, {summary['labeled']} labeled, "
        f"{summary['duplicates_removed']} duplicates removed, {summary['labeled_kept']} kept, "
        f"{summary['n_labels']} labels"
    )
    msg.info(
        f"train {split['train_sentences']} sentences / {split['train_papers']} papers, "
        f"valid {split['valid_sentences']} sentences / {split['valid_papers']} papers -> {output}"
    )
    if summary["inputs_pending"]:
        msg.warn(f"{summary['inputs_pending']} inputs not labeled yet (--merge-only): rerun without it to finish")
    report_skipped(summary)
    if summary["bad_records"]:
        msg.warn(f"{summary['bad_records']} malformed records skipped, e.g. {printable(summary['bad_record_examples'][:3])}")
    if summary["timing"]["words_per_second"]:
        msg.info(f"labeling: {summary['timing']['words_per_second']:.0f} words/s")
    rows = list(summary["per_label"].items())
    if rows:
        msg.table(rows, header=("label", "sentences"), divider=True)
