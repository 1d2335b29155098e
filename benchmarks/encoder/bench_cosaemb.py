"""COSAEMB full-text paragraph retrieval (CoSaEmb §4, Table 6).

Held-out papers: the reference papers of the given manual CL-SciSumm topics
(``--topics``, by default the 10 topics held out everywhere in this project)
plus the first ``--auto`` reference papers of scisummnet-2019-auto, minus any
paper a model was trained on (``--train-root`` with ``--exclude-topics``: the
papers ``spacy-rhetoric train-cosaemb`` read). Protocol and chunks:
``spacy_rhetoric.pretrain.paragraph_retrieval``.

    python benchmarks/encoder/bench_cosaemb.py --max-length 128 --auto 90 \\
        --model raw=sentence-transformers/all-MiniLM-L6-v2 \\
        --model flat=training/cosaemb_111/model --model graded=training/cosaemb_123/model \\
        --out benchmarks/encoder/results/cosaemb_retrieval.json
"""
import argparse
import json
import os
import time
from pathlib import Path

HELD_OUT = "C98-1097,D09-1023,D10-1058,N09-1001,N09-1025,P00-1025,P07-1040,W06-3909,W09-0621,W11-0815"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    data = Path(os.environ.get("SPACY_RHETORIC_DATA", "../shared/data"))
    p.add_argument("--model", action="append", required=True, help="NAME=PATH_OR_HUB_NAME (repeatable)")
    p.add_argument("--manual", default=str(data / "cl-scisumm" / "training-40-manual"))
    p.add_argument("--auto-root", default=str(data / "cl-scisumm" / "scisummnet-2019-auto"))
    p.add_argument("--topics", default=HELD_OUT, help="held-out manual topic ids")
    p.add_argument("--auto", type=int, default=90, help="auto-annotated reference papers added (0 = none)")
    p.add_argument("--train-root", default=None, help="CL-SciSumm dir the models were trained on (default --manual)")
    p.add_argument("--exclude-topics", default=HELD_OUT, help="topics left out of training (as train-cosaemb)")
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    from spacy_rhetoric.pretrain.cosaemb import clscisumm_corpus
    from spacy_rhetoric.pretrain.paragraph_retrieval import held_out_papers, paragraph_retrieval

    if args.threads:
        torch.set_num_threads(args.threads)
    models = [m.split("=", 1) for m in args.model]
    if any(len(m) != 2 for m in models):
        p.error("--model takes NAME=PATH")
    trained_on = clscisumm_corpus(args.train_root or args.manual, exclude=args.exclude_topics.split(","))
    seen = set(trained_on.papers)
    papers = held_out_papers([args.manual], topics=args.topics.split(","), exclude_ids=seen)
    if args.auto:
        papers += held_out_papers([args.auto_root], limit=args.auto, exclude_ids=seen | {x.paper_id for x in papers})
    print(f"{len(papers)} held-out papers ({len(seen)} training papers excluded)", flush=True)
    rows = {}
    for name, model in models:
        start = time.time()
        rows[name] = paragraph_retrieval(model, papers, max_length=args.max_length, batch_size=args.batch_size,
                                         progress=True)
        rows[name]["seconds"] = round(time.time() - start, 1)
        print(json.dumps({name: rows[name]}), flush=True)
    report = {"settings": vars(args), "papers": [x.paper_id for x in papers], "rows": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2))
    tmp.replace(out)
    for name, row in rows.items():
        e, c = row["euclidean"], row["cosine"]
        print(f"| {name} | {e['recall_at_1']:.4f} | {e['recall_at_3']:.4f} | {c['recall_at_1']:.4f} | "
              f"{c['recall_at_3']:.4f} | {row['chunks']} |")


if __name__ == "__main__":
    main()
