"""Retrieval scores (P@1, MAP@R) of a trained rhetoric_sentence_encoder.

    python benchmarks/encoder/bench_encoder.py MODEL_DIR DEV.spacy [--unit sentence|doc|both] [--out JSON]

DEV.spacy is a DocBin written by ``spacy-rhetoric convert`` (gold sentence
boundaries and labels). ``--unit sentence`` encodes every labelled sentence
as its own doc (as the PK-batch training sees them, via
``spacy_rhetoric.SentenceCorpus.v1``); ``--unit doc`` encodes whole
documents (each sentence sees its neighbours through the transformer). Gold
sentence boundaries are kept (``spacy_rhetoric.evaluation.metrics.sentence_vectors``)
and the scores come from ``spacy_rhetoric.evaluation.metrics.retrieval_scores``
(leave-one-out, cosine on L2-normalised vectors).
"""
import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("dev", type=Path)
    parser.add_argument("--unit", choices=["sentence", "doc", "both"], default="both")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import spacy
    import torch
    from spacy.tokens import DocBin

    from spacy_rhetoric.evaluation.metrics import retrieval_scores, sentence_vectors
    from spacy_rhetoric.readers.common import labelled_sentence_docs

    torch.set_num_threads(args.threads)
    nlp = spacy.load(args.model)
    docs = list(DocBin().from_disk(args.dev).get_docs(nlp.vocab))
    units = ["sentence", "doc"] if args.unit == "both" else [args.unit]
    result = {
        "model": str(args.model),
        "dev": str(args.dev),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} ({os.cpu_count()} CPUs, shared)",
        "torch_threads": args.threads,
    }
    for unit in units:
        if unit == "sentence":
            eval_docs = list(labelled_sentence_docs(docs))
        else:
            eval_docs = docs
        start = time.time()
        vectors, labels = sentence_vectors(nlp, eval_docs, progress=False)
        encode_s = time.time() - start
        scores = retrieval_scores(vectors, labels)
        result[unit] = {
            "p_at_1": round(float(scores["p_at_1"]), 4),
            "map_at_r": round(float(scores["map_at_r"]), 4),
            "n_sentences": int(len(labels)),
            "encode_seconds": round(encode_s, 1),
        }
        print(f"{unit:8s} P@1 {scores['p_at_1']:.4f}  MAP@R {scores['map_at_r']:.4f}  "
              f"({len(labels)} sentences, {encode_s:.0f}s)", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
