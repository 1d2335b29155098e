"""``spacy-rhetoric align A B``: for each sentence of paper A, the most
functionally similar sentence of paper B, with its cosine score (paper
appendix D). Logic in :mod:`spacy_rhetoric.apps.alignment`.

    spacy-rhetoric align A.xml B.xml --model packages/... [-k 1] [--output pairs.jsonl]

Papers, pipeline and output path are checked before the papers are encoded;
the pairs file is written to a temporary file and renamed into place.

Papers: CL-SciSumm reference XML, ``.spacy`` DocBin, or plain text (sentences
split by the pipeline, or one per line with ``--lines``).
"""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ..errors import RhetoricError
from . import app
from .common import guard, non_negative_int, positive_int, printable


def _short(text: str, width: int) -> str:
    """One line of paper text for the table (``printable``), cut to ``width`` (0: whole)."""
    text = printable(" ".join(str(text).split()))
    return text if width <= 0 or len(text) <= width else text[: width - 1] + "…"


@app.command("align")
def align_cli(
    paper_a: Path = typer.Argument(..., help="Paper A: CL-SciSumm XML, .spacy or plain text"),
    paper_b: Path = typer.Argument(..., help="Paper B: CL-SciSumm XML, .spacy or plain text"),
    model: str = typer.Option(..., "--model", "-m", help="Pipeline (path or package name) that sets sentence vectors (an encoder, or a classifier with a vector head)"),
    k: int = typer.Option(1, "--k", "-k", callback=positive_int, help="Matches per sentence of A (at least 1)"),
    lines: bool = typer.Option(False, "--lines", help="Plain text: one sentence per non-empty line"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the pairs as JSON lines"),
    width: int = typer.Option(70, "--width", callback=non_negative_int,
                              help="Characters of each sentence shown in the table (0 = full)"),
    html_output: Optional[Path] = typer.Option(None, "--html", help="Also write the two papers side by side, "
                                               "linked, as a self-contained HTML page (render.render_alignment)"),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file that does not look like one this command writes"),
) -> None:
    """Print, for each sentence of A, its best match(es) in B with the score."""
    import spacy
    from tqdm import tqdm

    import spacy_rhetoric  # noqa: F401 - extensions and factories

    from ..apps.alignment import align_encoded, alignment_summary, check_pipeline, encode_paper
    from ..io import atomic_write_lines, check_input, check_outputs, prepare_outputs

    with guard("align"):
        check_input(paper_a, what="paper A")
        check_input(paper_b, what="paper B")
        inputs = [paper_a, paper_b] + ([Path(model)] if Path(model).exists() else [])
        check_outputs({"output": output, "HTML output": html_output}, inputs=inputs,
                      kinds={"output": "jsonl", "HTML output": "html"}, force=force)
        prepare_outputs({"output": output, "HTML output": html_output})
        try:
            nlp = spacy.load(model)
        except OSError as err:
            raise RhetoricError(f"cannot load pipeline {model!r}: {err}") from err
        check_pipeline(nlp)
        # disable=None: a progress bar on a terminal only (stderr), never in captured output.
        a, b = (encode_paper(nlp, paper, lines=lines)
                for paper in tqdm((paper_a, paper_b), desc="encode", unit="paper", disable=None))
    if k > len(b.sentences):
        msg.warn(f"-k {k}: paper B has only {len(b.sentences)} sentences; showing {len(b.sentences)} "
                 "matches per sentence")
    alignments = align_encoded(a, b, k=k)
    rows = [
        (printable(al.a_sid or al.a_index), _short(al.a_text, width), f"{al.score:.3f}",
         printable(al.b_sid or al.b_index), _short(al.b_text, width))
        for al in alignments
    ]
    msg.table(rows, header=("A", "sentence of A", "cosine", "B", "best match in B"), divider=True)
    summary = alignment_summary(alignments)
    msg.info(f"{summary['n']} sentences of A ({len(a.sentences)}) against {len(b.sentences)} of B; "
             f"mean best cosine {summary['mean_score']:.3f}; {summary['b_matched']} distinct B sentences matched")
    if output is not None:
        atomic_write_lines(output, [dict(al.to_dict(), paper_a=str(paper_a), paper_b=str(paper_b))
                                    for al in alignments])
        msg.good(f"{len(alignments)} pairs written to {output}")
    if html_output is not None:
        from ..apps.render import render_alignment
        from ..io import atomic_write_text

        atomic_write_text(html_output, render_alignment(a, b, alignments))
        msg.good(f"side-by-side page written to {html_output}")
