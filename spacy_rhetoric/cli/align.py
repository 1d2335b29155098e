"""``spacy-rhetoric align A B``: for each sentence of paper A, the most
functionally similar sentence of paper B, with its cosine score (paper
appendix D). Logic in :mod:`spacy_rhetoric.alignment`.

    spacy-rhetoric align A.xml B.xml --model packages/... [-k 1] [--output pairs.jsonl]

Papers: CL-SciSumm reference XML, ``.spacy`` DocBin, or plain text (sentences
split by the pipeline, or one per line with ``--lines``).
"""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from . import app


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@app.command("align")
def align_cli(
    paper_a: Path = typer.Argument(..., help="Paper A: CL-SciSumm XML, .spacy or plain text"),
    paper_b: Path = typer.Argument(..., help="Paper B: CL-SciSumm XML, .spacy or plain text"),
    model: str = typer.Option(..., "--model", "-m", help="Pipeline (path or package name) with a rhetoric_sentence_encoder"),
    k: int = typer.Option(1, "--k", "-k", help="Matches per sentence of A"),
    lines: bool = typer.Option(False, "--lines", help="Plain text: one sentence per non-empty line"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the pairs as JSON lines"),
    width: int = typer.Option(70, "--width", help="Characters of each sentence shown in the table (0 = full)"),
) -> None:
    """Print, for each sentence of A, its best match(es) in B with the score."""
    import spacy
    import srsly

    import spacy_rhetoric  # noqa: F401 - extensions and factories

    from ..alignment import AlignmentError, align_encoded, alignment_summary, encode_paper

    try:
        nlp = spacy.load(model)
    except OSError as err:
        msg.fail(f"Cannot load pipeline {model!r}: {err}", exits=1)
    try:
        a = encode_paper(nlp, paper_a, lines=lines)
        b = encode_paper(nlp, paper_b, lines=lines)
    except AlignmentError as err:
        msg.fail(str(err), exits=1)
    alignments = align_encoded(a, b, k=k)
    show = (lambda t: " ".join(t.split())) if width <= 0 else (lambda t: _short(t, width))
    rows = [
        (al.a_sid or al.a_index, show(al.a_text), f"{al.score:.3f}", al.b_sid or al.b_index, show(al.b_text))
        for al in alignments
    ]
    msg.table(rows, header=("A", "sentence of A", "cosine", "B", "best match in B"), divider=True)
    summary = alignment_summary(alignments)
    msg.info(f"{summary['n']} sentences of A ({len(a.sentences)}) against {len(b.sentences)} of B; "
             f"mean best cosine {summary['mean_score']:.3f}; {summary['b_matched']} distinct B sentences matched")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_jsonl(output, [dict(al.to_dict(), paper_a=str(paper_a), paper_b=str(paper_b)) for al in alignments])
        msg.good(f"{len(alignments)} pairs written to {output}")
