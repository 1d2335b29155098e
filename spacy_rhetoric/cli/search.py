"""``spacy-rhetoric search INDEX "query sentence"``: the indexed sentences that
make the same rhetorical move as the query (library:
:class:`spacy_rhetoric.search.RhetoricIndex`), filterable by label, section
and paper. The query is encoded with the pipeline the index was built with.

    spacy-rhetoric search corpus.index "We propose a new method for X." --label method -k 5
"""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from . import app
from .common import guard, json_line, non_negative_int, positive_int, printable


def _short(text: str, width: int) -> str:
    """One line of paper text for the table (``printable``), cut to ``width`` (0: whole)."""
    text = printable(" ".join(str(text).split()))
    return text if width <= 0 or len(text) <= width else text[: width - 1] + "…"


@app.command("search")
def search_cli(
    index: Path = typer.Argument(..., help="Index directory written by `spacy-rhetoric index`"),
    query: str = typer.Argument(..., help="Query sentence"),
    k: int = typer.Option(10, "--k", "-k", callback=positive_int, help="Number of hits"),
    label: Optional[str] = typer.Option(None, "--label", help="Only sentences with this function label"),
    section: Optional[str] = typer.Option(None, "--section", help="Only sentences of this section"),
    paper: Optional[str] = typer.Option(None, "--paper", help="Only sentences of this paper id"),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per hit instead of a table"),
    width: int = typer.Option(90, "--width", callback=non_negative_int, help="Characters of text shown (0 = all)"),
) -> None:
    """Find corpus sentences that make the same move as QUERY."""
    from ..search import RhetoricIndex

    with guard("search"):
        rindex = RhetoricIndex.load(index)
        hits = rindex.search(query, k=k, label=label, section=section, paper=paper)
    if as_json:
        for hit in hits:
            print(json_line(hit.to_dict()))
    elif hits:
        rows = [(i, f"{h.score:.3f}", printable(h.paper or ""), printable(h.section or ""), printable(h.label or ""),
                 _short(h.text, width))
                for i, h in enumerate(hits, start=1)]
        msg.table(rows, header=("#", "cosine", "paper", "section", "label", "sentence"), divider=True)
    if not hits:
        msg.warn("no sentence matches the filters")
