"""Build the heading classifier shipped with ``rhetoric_section_tagger``
(``assets/section_model.json``) from the FeRoSA heading list.

Reproducible: the same TSV gives the same JSON (lbfgs logistic regression,
no randomness). ``--test-fraction 0.2`` trains on the 80 % side of the
split by heading string that ``benchmarks/fullpaper/bench_section_tagger.py`` holds
back (same ``--seed``), for a model that never saw the benchmark's headings.

    python scripts/build_section_model.py ../shared/data/ferosa-section-headings/section_mapping.tsv
"""
import os
from pathlib import Path

import typer
from wasabi import msg

from spacy_rhetoric.readers.ferosa import read_ferosa_headings
from spacy_rhetoric.resources import asset_path
from spacy_rhetoric.section_headings import MODEL_FILE, split_headings, train_heading_classifier

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TSV = Path(os.environ.get("SPACY_RHETORIC_DATA", REPO.parent / "shared" / "data")) / (
    "ferosa-section-headings/section_mapping.tsv"
)


def main(
    headings: Path = typer.Argument(DEFAULT_TSV, help="FeRoSA section_mapping.tsv (heading<TAB>facet)"),
    output: Path = typer.Option(None, "--output", "-o", help="Model JSON (default: the packaged model file)"),
    test_fraction: float = typer.Option(0.0, "--test-fraction", help="Leave out this share of heading strings"),
    seed: int = typer.Option(0, "--seed", help="Seed of the split by heading string"),
) -> None:
    """Train the heading classifier on HEADINGS and write it as JSON."""
    if not headings.is_file():
        msg.fail(f"no heading file {headings}", exits=1)
    if output is None:
        output = asset_path(MODEL_FILE)
    pairs, dropped = read_ferosa_headings(headings)
    source = headings.name
    if test_fraction > 0:
        pairs, held_out = split_headings(pairs, test_fraction=test_fraction, seed=seed)
        source = f"{source} minus {len(held_out)} held-out rows (test_fraction {test_fraction}, seed {seed})"
    model = train_heading_classifier(pairs, source=source)
    output.parent.mkdir(parents=True, exist_ok=True)
    model.to_disk(output)
    msg.good(
        f"{output}: {len(pairs)} headings ({dict(dropped)} dropped), {len(model.vectorizer.vocabulary)} "
        f"features, classes {model.classes}, {output.stat().st_size / 1024:.0f} KB"
    )


if __name__ == "__main__":
    typer.run(main)
