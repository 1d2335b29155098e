"""``spacy-rhetoric evaluate``: sentence-embedding and classifier evaluation
of a pipeline (or of a raw Hugging Face model) on gold ``.spacy`` files.

MODEL is a pipeline directory/package or ``raw:<hf name>`` (plain
transformer, mean pooling, no fine-tuning). ``--baseline`` adds more models to
the same report (``raw-minilm`` = ``raw:sentence-transformers/all-MiniLM-L6-v2``,
or any other MODEL spec such as a tok2vec pipeline path).

Inputs, pipelines, ``--label-field`` and every output path (``-o`` report,
``--tsne`` PNGs) are checked before any work; outputs are written to a
temporary file and renamed into place. A dev set without labelled sentences,
or models that give neither vectors nor labels, exit 1 ("Nothing done").
"""
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer
from wasabi import msg

from ..evaluation.models import (  # noqa: F401 - re-exported (the library side is evaluation/models.py)
    BASELINE_ALIASES,
    RAW_PREFIX,
    ROWS,
    evaluate_model,
    gold_texts_and_labels,
    load_pipeline,
    model_outputs,
    read_docbin,
    report_table,
    resolve_model_spec,
    warn_label_mismatch,
)
from . import app
from .common import fail, guard, non_negative_int, nothing_done, positive_int


def _tsne_path(base: Optional[Path], index: int, spec: str) -> Optional[Path]:
    if base is None or index == 0:
        return base
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", spec.replace(RAW_PREFIX, "raw-")).strip("_")
    return base.with_name(f"{base.stem}.{safe}{base.suffix or '.png'}")


def _check_unit(value: str) -> str:
    if value not in UNITS:
        raise typer.BadParameter(f"must be 'doc' or 'sentence', got {value!r}")
    return value


UNITS = ("doc", "sentence")


@app.command("evaluate")
def evaluate_cli(
    model: str = typer.Argument(..., help="Pipeline path/package, or raw:<hf name> for a plain transformer"),
    dev_path: Path = typer.Argument(..., help="Gold .spacy file (sentence labels) to evaluate on"),
    train: Optional[Path] = typer.Option(None, "--train", help="Gold .spacy file to train the downstream classifiers on"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the JSON report here"),
    tsne: Optional[Path] = typer.Option(None, "--tsne", help="t-SNE PNG of the dev vectors (baselines get a suffixed name)"),
    baseline: Optional[List[str]] = typer.Option(None, "--baseline", help="Extra model(s) in the same report: raw-minilm, raw:<hf name> or a pipeline path"),
    limit: int = typer.Option(0, "--limit", callback=non_negative_int, help="Use only the first N docs of each file (0 = all)"),
    seed: int = typer.Option(0, "--seed", help="Seed of k-means, classifiers, samples"),
    batch_size: int = typer.Option(64, "--batch-size", callback=positive_int, help="Batch size of the raw transformer"),
    unit: str = typer.Option("doc", "--unit", callback=_check_unit, help="'doc': run the pipeline on whole "
                             "documents (sentences see their neighbours); 'sentence': each labelled sentence on its own"),
    label_field: str = typer.Option("label", "--label-field", help="Predicted field scored against the gold "
                                    "labels: 'label' (coarse classifier) or 'fine_label' (fine classifier)"),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file that does not look like one this command writes"),
) -> None:
    """Retrieval (P@1, MAP@R), downstream classifiers (F1-micro, trained on
    --train), k-means clustering (ARI/AMI/Silhouette), the function
    classifier's F1 when the pipeline has one, and an optional t-SNE plot."""
    from spacy.vocab import Vocab

    from ..evaluation import metrics as evaluation
    from ..io import atomic_write_json, check_outputs, prepare_outputs
    from ..readers.common import labelled_sentence_docs

    specs = list(dict.fromkeys([resolve_model_spec(model)] + [resolve_model_spec(b) for b in (baseline or [])]))
    tsne_paths = {spec: _tsne_path(tsne, i, spec) for i, spec in enumerate(specs)}
    with guard("evaluate"):
        inputs = [dev_path] + ([train] if train is not None else [])
        inputs += [Path(spec) for spec in specs if not spec.startswith(RAW_PREFIX) and Path(spec).exists()]
        outputs = {"report (-o)": output}
        outputs.update({f"t-SNE plot of {spec}": path for spec, path in tsne_paths.items()})
        kinds = {what: "png" for what in outputs}
        kinds["report (-o)"] = "json"
        check_outputs(outputs, inputs=inputs, kinds=kinds, force=force)
        vocab = Vocab()
        dev_docs = read_docbin(dev_path, vocab, limit)
        train_docs = read_docbin(train, vocab, limit) if train is not None else None
        for spec in specs:
            if not spec.startswith(RAW_PREFIX):
                evaluation.check_label_field(load_pipeline(spec), label_field, name=spec)
        prepare_outputs(outputs)
    if unit == "sentence":
        dev_docs = list(labelled_sentence_docs(dev_docs))
        train_docs = list(labelled_sentence_docs(train_docs)) if train_docs is not None else None
    n_gold = sum(len(evaluation.gold_sentences(doc)) for doc in dev_docs)
    if not n_gold:
        nothing_done(f"{dev_path} has no sentences with a gold label ({len(dev_docs)} docs)")
    if train_docs is not None and not any(evaluation.gold_sentences(doc) for doc in train_docs):
        fail(f"evaluate: --train {train} has no sentences with a gold label ({len(train_docs)} docs)")
    msg.info(f"{len(dev_docs)} dev docs, {n_gold} labelled sentences"
             + (f"; {len(train_docs)} train docs" if train_docs else ""))
    models: Dict[str, Dict[str, Any]] = {}
    with guard("evaluate"):
        for spec in specs:
            models[spec] = evaluate_model(spec, dev_docs, train_docs, seed=seed, tsne=tsne_paths[spec],
                                          batch_size=batch_size, label_field=label_field)
    if not any("retrieval" in m or "classifier" in m for m in models.values()):
        nothing_done(f"no model gave sentence vectors or {label_field!r} labels: "
                     "does the pipeline have a rhetoric_sentence_encoder or rhetoric_function_classifier?")
    report = {"dev": str(dev_path), "train": str(train) if train else None, "limit": limit, "unit": unit,
              "label_field": label_field,
              "seed": seed, "models": models}
    header, rows = report_table(models)
    msg.table(rows, header=header, divider=True)
    if output is not None:
        atomic_write_json(output, report)
        msg.good(f"Report written to {output}")
