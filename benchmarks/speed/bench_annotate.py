"""``spacy-rhetoric annotate`` speed: papers/s and sentences/s.

Annotates the same papers (by default the first ``--limit`` CL-SciSumm
reference XMLs of the 40 manual topics, in key order; ``--inputs`` any
folders of papers, e.g. ``paper-formats``) three times,
from scratch each time — ``nlp.pipe`` with n_process=1, with n_process=2, and
on a 2-worker Dask LocalCluster (1 thread each) — checks that the three
``annotations.jsonl`` are identical, and prints a Markdown table (and JSON to
``--report``). The pipeline is the demo pipeline (``make demo``:
en_core_web_sm parser + phrase labeler + coarse classifier + encoder, CPU).
The clock (``summary["timing"]``) excludes loading the pipeline in the main
process (Dask: the workers load it before the clock starts) and includes
reading and tokenizing the papers, worker start-up (n_process=2), the
pipeline, and writing the shards; "wall" is the whole call including the
pipeline load and the final merge.

    nice -n 10 python benchmarks/speed/bench_annotate.py --data ../shared/data --pipeline .demo/pipeline --limit 12
    python benchmarks/speed/bench_annotate.py --pipeline .demo/pipeline --inputs ../shared/data/paper-formats \
        --runs 1 2 --repeats 2 --report benchmarks/speed/results/annotate_nprocess.json

``--runs``: which of the three runs (1, 2: n_process; dask), ``--repeats``:
each that many times, alternating (the median is reported).
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

RUNS = (("nlp.pipe n_process=1", {"n_process": 1}),
        ("nlp.pipe n_process=2", {"n_process": 2}),
        ("Dask LocalCluster, 2 workers x 1 thread", {"scheduler": "local", "workers": 2}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--pipeline", default=".demo/pipeline")
    parser.add_argument("--limit", type=int, default=12, help="reference papers (first N by key)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--inputs", nargs="*", default=None, help="paper files or folders instead of CL-SciSumm")
    parser.add_argument("--runs", nargs="*", default=["1", "2", "dask"], choices=["1", "2", "dask"])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--report", default=None)
    args = parser.parse_args()
    if not Path(args.pipeline).is_dir():
        print(f"pipeline {args.pipeline} not found: run `make demo` first or pass --pipeline", file=sys.stderr)
        return 1
    from spacy_rhetoric.apps.annotate import AnnotateSettings, annotate_corpus

    corpus = [Path(p) for p in args.inputs] if args.inputs else [Path(args.data) / "cl-scisumm" / "training-40-manual"]
    limit = 0 if args.inputs else args.limit
    runs = [RUNS[("1", "2", "dask").index(r)] for r in args.runs]
    work = Path(tempfile.mkdtemp(prefix="bench_annotate-"))
    rows, outputs = [], []
    try:
        for repeat in range(args.repeats):
            for name, options in runs:
                out = work / str(len(rows))
                t0 = time.perf_counter()
                summary = annotate_corpus(args.pipeline, corpus, out,
                                          AnnotateSettings(limit=limit, batch_size=args.batch_size, **options))
                wall = time.perf_counter() - t0
                timing = summary["timing"]
                rows.append({"run": name, "repeat": repeat + 1, "papers": summary["papers"],
                             "sentences": summary["sentences"], "seconds": timing["seconds"],
                             "papers_per_second": timing["papers_per_second"],
                             "sentences_per_second": timing["sentences_per_second"], "wall_seconds": round(wall, 1)})
                outputs.append((out / "annotations.jsonl").read_bytes())
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    identical = all(o == outputs[0] for o in outputs)
    medians = {name: statistics.median(r["sentences_per_second"] for r in rows if r["run"] == name)
               for name, _ in runs}
    first = medians[runs[0][0]]
    report = {"pipeline": str(args.pipeline), "corpus": [str(c) for c in corpus], "limit": limit,
              "median_sentences_per_second": medians,
              "speedup_over_first": {name: round(v / first, 3) for name, v in medians.items()},
              "batch_size": args.batch_size, "identical_outputs": identical, "machine": platform.platform(),
              "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "runs": rows}
    print("\n| run | papers | sentences | seconds | papers/s | sentences/s | wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['run']} | {r['papers']} | {r['sentences']} | {r['seconds']:.1f} | "
              f"{r['papers_per_second']:.2f} | {r['sentences_per_second']:.0f} | {r['wall_seconds']:.1f} |")
    print(f"\nmedian sentences/s: {medians}; over the first run: {report['speedup_over_first']}")
    print(f"identical outputs: {identical}")
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf8")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
