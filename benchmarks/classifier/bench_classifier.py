"""Evaluate a trained rhetoric_function_classifier pipeline on CSAbstruct dev.

Two sentence segmentations of the same dev abstracts:
- "sentencizer": the pipeline's own sentence boundaries on raw text, exactly
  what `spacy train` reports as its dev score;
- "gold": the gold sentence boundaries preset on the input docs (the
  pipeline's sentencizer has overwrite = false, so it keeps them), the
  setting of the CSAbstruct literature, where sentences are given.

Usage:
    python benchmarks/classifier/bench_classifier.py training/classifier_fast/model-best \
        ../shared/data/csabstruct/dev.jsonl [--out benchmarks/classifier/results/classifier_fast.json] \
        [--modes gold]
"""
import json
import time
from pathlib import Path
from typing import Optional

import spacy
import typer
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from wasabi import msg

import spacy_rhetoric  # noqa: F401  (extensions)
from spacy_rhetoric.pipeline.function_classifier import score_function_classifier


def with_gold_sentences(example: Example) -> Doc:
    ref = example.reference
    doc = example.predicted.copy()
    if doc.text != ref.text or len(doc) != len(ref):
        raise ValueError("predicted and reference tokenization differ")
    for tok, ref_tok in zip(doc, ref):
        tok.is_sent_start = bool(ref_tok.is_sent_start)
    return doc


def main(
    model: Path,
    dev: Path,
    out: Optional[Path] = typer.Option(None, help="write the scores as JSON here"),
    batch_size: int = 32,
    modes: str = typer.Option("sentencizer,gold", help="comma-separated: sentencizer, gold"),
):
    nlp = spacy.load(model)
    reader = registry.readers.get("spacy_rhetoric.CSAbstructCorpus.v1")(path=dev)
    examples = list(reader(nlp))
    n_sents = sum(len(list(eg.reference.sents)) for eg in examples)
    msg.info(f"{len(examples)} abstracts, {n_sents} gold sentences from {dev}")
    results = {"model": str(model), "dev": str(dev), "abstracts": len(examples), "sentences": n_sents}
    for mode in [m.strip() for m in modes.split(",") if m.strip()]:
        if mode not in ("sentencizer", "gold"):
            raise typer.BadParameter(f"unknown mode {mode!r}")
        if mode == "gold":
            inputs = [with_gold_sentences(eg) for eg in examples]
        else:
            inputs = [eg.predicted.copy() for eg in examples]
        start = time.perf_counter()
        docs = list(nlp.pipe(inputs, batch_size=batch_size))
        seconds = time.perf_counter() - start
        scored = [Example(doc, eg.reference) for doc, eg in zip(docs, examples)]
        scores = score_function_classifier(scored)
        scores["seconds"] = round(seconds, 1)
        results[mode] = scores
        per = ", ".join(f"{k} {v['f']:.3f}" for k, v in scores["rhetoric_f_per_type"].items())
        msg.good(
            f"{mode}: F1-micro {scores['rhetoric_f_micro']:.4f}  F1-macro "
            f"{scores['rhetoric_f_macro']:.4f}  ({per}; {seconds:.0f}s)"
        )
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2))
        msg.good(f"Saved {out}")


if __name__ == "__main__":
    typer.run(main)
