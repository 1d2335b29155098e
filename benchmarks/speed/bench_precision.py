"""The number format of the fine-tuned member's prediction: float32, bfloat16 autocast, int8.

``FinetunedMember.v1`` ``precision`` ("auto": bfloat16 where the CPU multiplies it in hardware -- AMX or
AVX-512 BF16 -- else float32). For each format, alternating, ``--runs`` times:

1. the paper-formats papers (TEI, JATS, S2ORC; README skipped) through the whole pipeline: sentences/s, and
   the share of sentences whose label is the float32 label, the largest probability change, the smallest
   cosine of a sentence's vector with its float32 vector;
2. ``--art`` papers of ART (CoreSC; not in the demo's training data) with their expert labels: label
   accuracy against the coarse gold (lenient: any acceptable label) and the vectors' P@1 / MAP@R by CoreSC
   concept, the figures a format must keep (labels >= 99.5 % the float32 labels, P@1 within 0.005).

    OMP_NUM_THREADS=2 python benchmarks/speed/bench_precision.py --pipeline .demo/pipeline \
        [--data ../shared/data] [--formats fp32,bf16,int8] [--runs 2] [--art 40] [--out results/precision.json]
"""
import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parents[2]
CLASSIFIER = "rhetoric_function_classifier"


def paper_files(data: Path):
    from spacy_rhetoric.readers.papers import paper_files as files

    return [f for f in files([data / "paper-formats"]) if f.name != "README.md"]


def set_precision(nlp, precision: str) -> int:
    """Every fine-tuned member of the classifier predicts in ``precision``; how many members."""
    from spacy_rhetoric.ml.members import fitted_members

    members = [m for m in fitted_members(nlp.get_pipe(CLASSIFIER).model) if hasattr(m.shims[0], "precision")]
    for m in members:
        m.shims[0].precision = precision
    return len(members)


def sentence_rows(docs):
    from spacy_rhetoric.extensions import get_span_value

    return [(s._.rhetoric_label, get_span_value(s, "scores") or {}, get_span_value(s, "vector"))
            for d in docs for s in d.sents]


def compare(rows, base):
    same = sum(a[0] == b[0] for a, b in zip(rows, base)) / max(len(base), 1)
    change = max((abs(a[1].get(k, 0.0) - v) for a, b in zip(rows, base) for k, v in b[1].items()), default=0.0)
    cosines = [float(numpy.dot(a[2], b[2]) / (numpy.linalg.norm(a[2]) * numpy.linalg.norm(b[2]) or 1.0))
               for a, b in zip(rows, base) if a[2] is not None and b[2] is not None]
    return {"same_label": round(same, 4), "largest_probability_change": round(float(change), 4),
            "smallest_vector_cosine": round(min(cosines), 4) if cosines else None}


def art_scores(nlp, docs):
    from spacy_rhetoric.evaluation.metrics import retrieval_scores
    from spacy_rhetoric.evaluation.pipelines import kept_sentences, pipeline_scores
    from spacy_rhetoric.extensions import get_span_value

    vectors = []
    t0 = time.perf_counter()
    phrases = [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "rhetoric_phrase_labeler"]
    with nlp.select_pipes(disable=phrases):  # the gold sentences keep their boundaries: no parse to read
        scores = pipeline_scores(nlp, docs, vectors=vectors)
    seconds = time.perf_counter() - t0
    hits, n, vecs, concepts, labels = 0, 0, [], [], []
    for doc, doc_scores, doc_vectors in zip(docs, scores, vectors):
        for sent, s, v in zip(kept_sentences(doc), doc_scores, doc_vectors):
            gold = get_span_value(sent, "gold_labels") or [get_span_value(sent, "label")]
            label = max(s, key=s.get) if s else None
            labels.append(label)
            hits += label in gold
            n += 1
            if v is not None and get_span_value(sent, "fine_label"):
                vecs.append(v)
                concepts.append(get_span_value(sent, "fine_label"))
    retrieval = retrieval_scores(numpy.vstack(vecs), concepts) if vecs else {}
    return {"sentences": n, "lenient_accuracy": round(hits / max(n, 1), 4),
            "p_at_1": round(float(retrieval.get("p_at_1", float("nan"))), 4),
            "map_at_r": round(float(retrieval.get("map_at_r", float("nan"))), 4),
            "seconds": round(seconds, 2)}, labels


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--formats", default="fp32,bf16,int8")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--art", type=int, default=40, help="ART papers scored (0: none)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import spacy
    import torch

    from spacy_rhetoric.ml.finetuned_encoder import native_bf16, resolve_precision
    from spacy_rhetoric.readers.coresc import read_coresc
    from spacy_rhetoric.readers.papers import read_paper

    nlp = spacy.load(args.pipeline)
    formats = args.formats.split(",")
    files = paper_files(args.data)
    texts = [read_paper(f, nlp) for f in files]
    n_sents = sum(1 for d in texts for _ in d.sents)
    out = {"machine": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
           "native_bf16": native_bf16("cpu"), "auto": resolve_precision("auto", "cpu"),
           "papers": len(files), "sentences": n_sents, "formats": {}}
    print(f"{len(files)} papers, {n_sents} sentences; torch threads {out['threads']}; "
          f"bf16 in hardware: {out['native_bf16']}", flush=True)
    base = None
    for run in range(args.runs):
        for fmt in formats:
            if not set_precision(nlp, fmt):
                print("no fine-tuned member: nothing to compare")
                return 1
            t0 = time.perf_counter()
            done = list(nlp.pipe([d.copy() for d in texts], batch_size=4))
            seconds = time.perf_counter() - t0
            rows = sentence_rows(done)
            if fmt == formats[0] and base is None:
                base = rows
            row = out["formats"].setdefault(fmt, {"sentences_per_s": []})
            row["sentences_per_s"].append(round(n_sents / seconds, 1))
            row.update(compare(rows, base))
            print(f"run {run + 1} {fmt}: {n_sents / seconds:.1f} sentences/s; {row}", flush=True)
    for row in out["formats"].values():
        if row.get("sentences_per_s"):
            row["median_sentences_per_s"] = round(float(numpy.median(row["sentences_per_s"])), 1)
    if args.art:
        art = list(read_coresc(args.data / "coresc-art", nlp, limit=args.art))
        base_labels = None
        for fmt in formats:
            set_precision(nlp, fmt)
            scores, labels = art_scores(nlp, art)
            if base_labels is None:
                base_labels = labels
            scores["same_label"] = round(sum(a == b for a, b in zip(labels, base_labels)) / max(len(labels), 1), 4)
            out["formats"].setdefault(fmt, {})["art"] = scores
            print(f"ART {len(art)} papers, {fmt}: {scores}", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=2) + "\n")
        tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
