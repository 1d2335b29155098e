"""``spacy-rhetoric split``: a document-disjoint train/test split of a DocBin
(``spacy_rhetoric.readers.splits``, whose docstring describes the split)."""
from pathlib import Path

import typer
from wasabi import msg

from . import app
from .common import guard


@app.command("split")
def split_cli(
    input_path: Path = typer.Argument(..., metavar="INPUT", exists=True, dir_okay=False,
                                      help="A .spacy file written by `spacy-rhetoric convert`"),
    train_path: Path = typer.Argument(..., metavar="TRAIN", help="Output .spacy for the train side"),
    test_path: Path = typer.Argument(..., metavar="TEST", help="Output .spacy for the test side"),
    share: float = typer.Option(0.8, "--share", help="Share of the doc ids on the train side"),
    seed: int = typer.Option(0, "--seed", help="Seed of the id shuffle"),
    folds: int = typer.Option(0, "--folds", min=0, help="Cross-validation: deal the doc ids into this many "
                              "folds (seeded by --seed) and put fold --fold on the test side; 0: --share"),
    fold: int = typer.Option(0, "--fold", min=0, help="With --folds: the test fold (0-based)"),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file that does not look like one this command writes"),
) -> None:
    """Split a .spacy corpus by document id (no document on both sides)."""
    from ..readers.splits import split_docbin

    with guard("split"):
        counts = split_docbin(input_path, train_path, test_path, share=share, seed=seed, force=force,
                              folds=folds, fold=fold)
    msg.good(
        f"train: {counts['train_ids']} ids, {counts['train_docs']} docs, {counts['train_sentences']} sentences "
        f"-> {train_path}; test: {counts['test_ids']} ids, {counts['test_docs']} docs, "
        f"{counts['test_sentences']} sentences -> {test_path}"
    )
    for side in ("train", "test"):
        if not counts[f"{side}_ids"]:
            msg.warn(f"the {side} side is empty: too few doc ids for "
                     + (f"--folds {folds}" if folds else f"--share {share}"))
