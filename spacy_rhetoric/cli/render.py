"""``spacy-rhetoric render PAPER -o paper.html [--model PIPELINE]``: one
self-contained HTML page (inline CSS/JS, no network) showing the paper by
section, every sentence coloured by its function label, with a legend and
tooltips (label scores, fine function, phrase evidence, section). Library:
:mod:`spacy_rhetoric.apps.render`.

PAPER is a ``.spacy`` file already annotated (every Doc in it is shown), or
with ``--model`` a ``.spacy`` file or a paper in any format the readers know
(TEI, JATS, S2ORC, PDF, CL-SciSumm XML, text; ``readers.papers``), annotated by the
pipeline with its sentence boundaries kept. ``--format`` says which when its
content would not (``--format text`` for a text that starts like XML);
``auto``: a ``.spacy`` file by its name, a paper by its content.
"""
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from ..errors import RhetoricError
from . import app
from .common import PIPELINE_GPU_HELP, guard, nothing_done

RENDER_FORMATS = ("auto", "spacy", "tei", "jats", "s2orc", "text", "pdf", "clscisumm")


def _check_format(value: str) -> str:
    if value not in RENDER_FORMATS:
        raise typer.BadParameter(f"unknown format {value!r}; choose from: {', '.join(RENDER_FORMATS)}")
    return value


def annotated_docs(paper: Path, model: Optional[str], fmt: str = "auto") -> List:
    """The Docs of ``paper`` (read as ``fmt``, see ``RENDER_FORMATS``),
    annotated by ``model`` if given; a RhetoricError naming the file when
    there is nothing to show."""
    import spacy
    from spacy.tokens import DocBin

    import spacy_rhetoric  # noqa: F401 - extensions and factories

    from ..apps.render import has_labels
    from ..extensions import docbin_docs
    from ..readers.common import sentence_splitters

    nlp = None
    if model is not None:
        try:
            nlp = spacy.load(model)
        except OSError as err:
            raise RhetoricError(f"cannot load pipeline {model!r}: {err}") from err
    if fmt == "spacy" or (fmt == "auto" and paper.suffix.lower() == ".spacy"):
        try:
            docs = list(docbin_docs(DocBin(store_user_data=True).from_disk(paper), (nlp or spacy.blank("en")).vocab))
        except Exception as err:  # noqa: BLE001 - name the file
            raise RhetoricError(f"{paper}: cannot read as a .spacy DocBin: {err}") from err
        docs = [d for d in docs if len(d)]
        if not docs:
            raise RhetoricError(f"{paper}: the DocBin holds no non-empty Doc")
    elif nlp is None:
        raise RhetoricError(f"{paper} is not an annotated .spacy file: pass --model PIPELINE to annotate it")
    else:
        from ..readers.papers import read_paper

        docs = [read_paper(paper, nlp, fmt=fmt, named=True)]
    if nlp is not None:  # preset sentence boundaries are kept; a long paper in pieces (long_docs)
        from ..long_docs import process_long_doc

        docs = [process_long_doc(nlp, doc, disable=sentence_splitters(nlp) if doc.has_annotation("SENT_START")
                                 else []) for doc in docs]
    if not any(has_labels(doc) for doc in docs):
        raise RhetoricError(f"{paper}: no sentence has a rhetoric label"
                         + ("" if nlp is not None else " (annotate it with --model PIPELINE)")
                         + ("" if nlp is None else f"; the pipeline {model!r} has no rhetoric_function_classifier?"))
    return docs


@app.command("render")
def render_cli(
    paper: Path = typer.Argument(..., help="Annotated .spacy, or a paper file (with --model)"),
    output: Path = typer.Option(..., "--output", "-o", help="HTML file to write"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Pipeline that annotates PAPER"),
    fmt: str = typer.Option("auto", "--format", "-f", callback=_check_format,
                            help="Format of PAPER: auto (.spacy by name, a paper by its content), spacy, tei, jats, "
                                 "s2orc, text, pdf or clscisumm"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help=PIPELINE_GPU_HELP),
    title: Optional[str] = typer.Option(None, "--title", help="Page title (default: paper title or id)"),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file that does not look like one this command writes"),
) -> None:
    """Render an annotated paper as one self-contained HTML page."""
    from ..apps.render import render_paper
    from ..io import atomic_write_text, check_input, check_outputs, prepare_outputs
    from ..util import use_device

    with guard("render"):
        use_device(gpu_id)
        check_input(paper, what="paper")
        inputs = [paper] + ([Path(model)] if model and Path(model).exists() else [])
        check_outputs({"output": output}, inputs=inputs, kinds={"output": "html"}, force=force)
        prepare_outputs({"output": output})
        docs = annotated_docs(paper, model, fmt)
        page = render_paper(docs, title=title)
    if not docs:
        nothing_done("no paper to render")
    atomic_write_text(output, page)
    n = sum(1 for doc in docs for s in doc.sents if s.text.strip())
    msg.good(f"{len(docs)} paper(s), {n} sentences -> {output}")
