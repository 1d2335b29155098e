"""``spacy-rhetoric demo`` (what ``make demo`` runs): train a small pipeline
(section-aware function classifier whose trunk also gives the sentence vectors, phrase labeler, section tagger)
and annotate a paper section by section (``spacy_rhetoric.apps.demo``, whose
docstring describes the steps). Works from any directory and from an installed wheel; data from
``$SPACY_RHETORIC_DATA`` or ``../shared/data``."""
from pathlib import Path
from typing import Optional

import typer

from ..apps.demo import DEFAULT_CLASSIFIER_STEPS, DEFAULT_ENCODER_STEPS
from . import app
from .common import PIPELINE_GPU_HELP, guard, non_negative_int, nothing_done, positive_int


@app.command("demo")
def demo_cli(
    paper: Optional[Path] = typer.Argument(
        None, help="Paper file: PDF, GROBID TEI, JATS, S2ORC JSON or plain text (default: the GROBID TEI sample "
                   "paper-formats/grobid-tei/N18-3011.tei.xml of the data directory, else the packaged sample paper)"),
    output: Path = typer.Option(Path(".demo"), "--output", help="Trained models, corpus and the pipeline go here"),
    classifier_steps: int = typer.Option(DEFAULT_CLASSIFIER_STEPS, "--classifier-steps", callback=positive_int,
                                         help="Training steps of the function classifier"),
    encoder_steps: int = typer.Option(DEFAULT_ENCODER_STEPS, "--encoder-steps", callback=non_negative_int,
                                      help="0 (default): the classifier's trunk gives the sentence vectors (its "
                                           "vector head); N: also train the separate tok2vec sentence encoder "
                                           "(configs/encoder.cfg) N steps, whose vectors the pipeline then uses"),
    retrain: bool = typer.Option(False, "--retrain", help="Train again even if OUTPUT has matching models"),
    parser: str = typer.Option("en_core_web_sm", "--parser", help="Parser pipeline (name or path)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help=PIPELINE_GPU_HELP + "; the models train there too"),
) -> None:
    """Train a small pipeline (on the CPU, or the GPU of --gpu-id) and annotate a paper with it, section by section."""
    from ..apps import demo

    with guard("demo"):
        counts = demo.run(paper, output, classifier_steps=classifier_steps, encoder_steps=encoder_steps,
                          retrain=retrain, parser=parser, gpu_id=gpu_id)
    if not counts["sentences"]:
        nothing_done(f"no sentences found in {paper or 'the sample paper'}")
