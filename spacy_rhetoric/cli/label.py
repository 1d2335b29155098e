"""``spacy-rhetoric label``: build the distant-supervision sentence set.

A thin wrapper around :func:`spacy_rhetoric.corpus_builder.build_corpus`
(see that module for the design: sentence boundaries, shards and resume,
de-duplication, the by-paper split, Dask scale-out).
"""
import os
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from . import app

DEFAULT_DATA = Path(os.environ.get("SPACY_RHETORIC_DATA", "../shared/data"))
DEFAULT_PHRASES = DEFAULT_DATA / "iwatsuki2021-fe-database-cl"


@app.command("label")
def label_command(
    inputs: List[Path] = typer.Argument(
        ..., help="Input files or directories: a CL-SciSumm root or topic dir (reference-paper XMLs), "
        ".xml, .txt (one sentence per line), .jsonl (one sentence per line: text, paper_id, section, sid) "
        "or .spacy files", exists=True,
    ),
    output: Path = typer.Option(..., "--output", "-o", help="Output directory (shards, train/valid .jsonl and .spacy, summary.json)"),
    phrases: Path = typer.Option(DEFAULT_PHRASES, "--phrases", "-p", help="Labeled phrase list: label<TAB>phrase[<TAB>count] file, a directory of them, or CFS3 5gram_dict.json"),
    n: int = typer.Option(5, "--n", help="n-gram length of the phrase labeler"),
    min_phrase_length: Optional[int] = typer.Option(
        None, "--min-phrase-length",
        help="Keep phrases shorter than n whole if they have at least this many tokens "
             "(default: n, i.e. only full n-grams, as in the paper)"),
    parser: str = typer.Option("en_core_web_sm", "--parser", help="English pipeline with tagger, lemmatizer and parser"),
    n_process: int = typer.Option(1, "--n-process", help="Processes for nlp.pipe (single machine)"),
    batch_size: int = typer.Option(256, "--batch-size", help="Sentences per nlp.pipe batch"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (tcp://host:port), or 'local' to start a LocalCluster"),
    workers: int = typer.Option(2, "--workers", help="Worker processes of the LocalCluster (--scheduler local)"),
    seed: int = typer.Option(0, "--seed", help="Seed of the train/validation split"),
    valid_fraction: float = typer.Option(0.2, "--valid-fraction", help="Share of sentences (whole papers) in validation"),
    limit: int = typer.Option(0, "--limit", help="Use only the first N input files (sorted by key); 0 = all"),
    code: Optional[Path] = typer.Option(None, "--code", help="Python file to import first (custom components), also on Dask workers"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard shards of an earlier build in OUTPUT instead of resuming"),
    merge_only: bool = typer.Option(False, "--merge-only", help="Label nothing: merge the shards that exist (snapshot of an unfinished build)"),
) -> None:
    """Label the sentences of a corpus with the phrase-n-gram root labeler and
    write a de-duplicated, by-paper train/validation split. Rerun the same
    command after an interruption to resume."""
    from ..corpus_builder import CorpusBuildError, build_corpus

    try:
        summary = build_corpus(
            inputs, output, phrases=phrases, parser=parser, n=n, min_phrase_length=min_phrase_length, code=code, n_process=n_process,
            batch_size=batch_size, scheduler=scheduler, workers=workers, seed=seed,
            valid_fraction=valid_fraction, limit=limit, overwrite=overwrite, show_progress=True,
            merge_only=merge_only,
        )
    except CorpusBuildError as err:
        msg.fail(str(err), exits=1)
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
    if summary["inputs_skipped"]:
        msg.warn(f"{summary['inputs_skipped']} inputs skipped:")
        for item in summary["skipped"][:20]:
            msg.text(f"  {item['reason']}")
    if summary["bad_records"]:
        msg.warn(f"{summary['bad_records']} malformed records skipped, e.g. {summary['bad_record_examples'][:3]}")
    if summary["timing"]["words_per_second"]:
        msg.info(f"labeling: {summary['timing']['words_per_second']:.0f} words/s")
    rows = list(summary["per_label"].items())
    if rows:
        msg.table(rows, header=("label", "sentences"), divider=True)
