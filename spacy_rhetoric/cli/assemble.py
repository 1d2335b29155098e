"""``spacy-rhetoric assemble``: one pipeline from the parser, the phrase
labeler and trained classifiers / encoder (``spacy_rhetoric.apps.assemble``, whose
docstring describes the result), written to OUTPUT.

    spacy-rhetoric assemble training/full/pipeline --phrases assets/data/iwatsuki2021-fe-database-cl \\
        --classifier training/full/classifier/model-best --fine-classifier training/full/fine_classifier/model-best \\
        --encoder training/full/encoder/model-best --name rhetoric_pipeline --version 0.0.1 \\
        --sources csabstruct,mulms-az,cl-scisumm

meta.json: ``spacy_rhetoric.meta`` (name, licence from the sources, scores, requirements).
"""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from . import app
from .common import guard, nothing_done, positive_int


@app.command("assemble")
def assemble_cli(
    output: Path = typer.Argument(..., help="Output pipeline directory (an existing pipeline there is replaced)"),
    parser: str = typer.Option("en_core_web_sm", "--parser", help="Parser pipeline (name or path)"),
    phrases: Optional[Path] = typer.Option(None, "--phrases", help="Phrase list for rhetoric_phrase_labeler"),
    n: int = typer.Option(5, "--n", callback=positive_int, help="n-gram length of the labeler"),
    classifier: Optional[Path] = typer.Option(None, "--classifier",
                                              help="Trained pipeline with the coarse rhetoric_function_classifier"),
    fine_classifier: Optional[Path] = typer.Option(
        None, "--fine-classifier", help="Trained pipeline with a fine-function classifier (label_field fine_label)"),
    encoder: Optional[Path] = typer.Option(None, "--encoder",
                                           help="Trained pipeline with rhetoric_sentence_encoder"),
    exclude: str = typer.Option("ner", "--exclude", help="Comma-separated parser components to leave out"),
    name: str = typer.Option("rhetoric_pipeline", "--name", help="meta.json name (spacy package adds lang_)"),
    version: str = typer.Option("0.0.1", "--version", help="meta.json version"),
    sources: str = typer.Option("", "--sources",
                                help="Comma-separated corpora the trained components learned from (keys of "
                                     "spacy_rhetoric.meta.SOURCES: csabstruct, mulms-az, az-cl, coresc-art, "
                                     "cl-scisumm); meta.json lists them and derives the licence from them"),
    license: str = typer.Option("", "--license",
                                help="meta.json license, instead of the one derived from the sources"),
) -> None:
    """Parser + phrase labeler + trained classifiers and encoder -> one pipeline."""
    from ..apps.assemble import CLASSIFIER, ENCODER, assemble, check_pipeline_output, save_pipeline
    from ..io import check_input
    from ..meta import source_entry

    components = [(path, factory) for path, factory in
                  ((classifier, CLASSIFIER), (fine_classifier, CLASSIFIER), (encoder, ENCODER)) if path is not None]
    if phrases is None and not components:
        nothing_done("give --phrases and/or trained --classifier / --fine-classifier / --encoder pipelines")
    with guard("assemble"):
        inputs = [p for p, _ in components] + ([phrases] if phrases is not None else [])
        for path in inputs:
            check_input(path, what="input", file_ok=path == phrases, dir_ok=True)
        check_pipeline_output(output, inputs=inputs)
        training = [s.strip() for s in sources.split(",") if s.strip()]
        for key in training:
            source_entry(key)  # an unknown name fails before any work
        nlp, report = assemble(parser, components, phrases=phrases, n=n,
                               exclude=[e for e in exclude.split(",") if e], name=name, version=version,
                               training=training, licence=license)
        save_pipeline(nlp, output)
    for key, value in report.items():
        msg.info(f"{key}: {value}")
    msg.good(f"pipeline {nlp.pipe_names} -> {output}")
