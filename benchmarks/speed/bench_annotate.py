"""``spacy-rhetoric annotate`` speed: papers/s and sentences/s.

Annotates the same papers (by default the first ``--limit`` CL-SciSumm
reference XMLs of the 40 manual topics, in key order; ``--inputs`` any
folders of papers, e.g. ``paper-formats``) three times,
from scratch each time — one ``nlp.pipe`` stream (n_process=1), two worker
processes (n_process=2: over paper files one task per paper,
``jobs.pool_inputs``; the run keeps its name "nlp.pipe n_process=2" so that
result files compare), and a 2-worker Dask LocalCluster (1 thread each) —
compares the three
``annotations.jsonl`` (byte-identical; else the same sentences with the same
labels, and the largest score change: in bfloat16 a score moves a little with
the batch a sentence is read in; the exit code is 1 when the sentences differ or fewer than
``--min-label-share``, 99.5 %, of the labels are the same), and prints a Markdown table (and JSON to
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
each that many times, alternating (the median is reported). ``--papers N
[N ...]``: a scaling table: for each N, a corpus of N papers made by repeating
the input papers (hard links under new names, so each is its own input), every
run on it; each row also gives seconds per paper and the peak resident memory
of this process and all its children together (sampled every 0.25 s).

    python benchmarks/speed/bench_annotate.py --pipeline .demo/pipeline --inputs ../shared/data/paper-formats \
        --papers 16 100 --runs 1 2 dask --report benchmarks/speed/results/annotate_scaling.json
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

RUNS = (("nlp.pipe n_process=1", {"n_process": 1}),
        ("nlp.pipe n_process=2", {"n_process": 2}),
        ("Dask LocalCluster, 2 workers x 1 thread", {"scheduler": "local", "workers": 2}))


@contextmanager
def peak_memory(every: float = 0.25):
    """Yields a dict whose ``"mb"`` is, once the block ends, the largest
    resident memory of this process and its children together (MB)."""
    import psutil

    me, out, stop = psutil.Process(), {"mb": 0.0}, threading.Event()

    def sample():
        while not stop.is_set():
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:  # a worker that just ended
                    pass
            out["mb"] = max(out["mb"], total / 2**20)
            stop.wait(every)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield out
    finally:
        stop.set()
        thread.join()


def label_agreement(first: bytes, other: bytes) -> dict:
    """Two runs' ``annotations.jsonl`` compared record by record: the same
    sentences with the same labels, the share of equal labels and the largest
    difference of a label score (in bfloat16 a score can move a little with
    the batch a sentence is read in; FinetunedMember.v1 ``precision``)."""
    a = [json.loads(line) for line in first.splitlines() if line.strip()]
    b = [json.loads(line) for line in other.splitlines() if line.strip()]
    texts = len(a) == len(b) and all(x.get("text") == y.get("text") for x, y in zip(a, b))
    equal = sum(x.get("label") == y.get("label") for x, y in zip(a, b))
    change = max((abs(float(v) - float((y.get("scores") or {}).get(k, 0.0))) for x, y in zip(a, b)
                  for k, v in (x.get("scores") or {}).items()), default=0.0)
    return {"same_sentences": texts, "same_labels": texts and equal == len(a),
            "equal_label_share": round(equal / max(len(a), 1), 5), "largest_score_change": round(change, 5)}


def repeated_corpus(inputs, n: int, folder: Path) -> Path:
    """A folder of ``n`` paper files cycling through the papers of
    ``inputs`` (README files left out), each under a name of its own."""
    from spacy_rhetoric.readers.papers import paper_files

    files = [f for f in paper_files(inputs) if f.stem.upper() != "README"]
    if not files:
        raise SystemExit(f"no paper files in {inputs}")
    folder.mkdir(parents=True)
    for i in range(n):
        src = files[i % len(files)]
        dst = folder / f"c{i:05d}-{src.name}"
        try:
            os.link(src, dst)
        except OSError:  # another file system: copy
            shutil.copyfile(src, dst)
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--pipeline", default=".demo/pipeline")
    parser.add_argument("--limit", type=int, default=12, help="reference papers (first N by key)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--inputs", nargs="*", default=None, help="paper files or folders instead of CL-SciSumm")
    parser.add_argument("--runs", nargs="*", default=["1", "2", "dask"], choices=["1", "2", "dask"])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--min-label-share", type=float, default=0.995,
                        help="exit 1 when a run's labels agree with the first run's on fewer sentences than this share "
                             "(or its sentences differ)")
    parser.add_argument("--report", default=None)
    parser.add_argument("--papers", type=int, nargs="*", default=None,
                        help="scaling table: corpora of these many papers, repeating the inputs")
    args = parser.parse_args()
    if not Path(args.pipeline).is_dir():
        print(f"pipeline {args.pipeline} not found: run `make demo` first or pass --pipeline", file=sys.stderr)
        return 1
    from spacy_rhetoric.apps.annotate import AnnotateSettings, annotate_corpus

    corpus = [Path(p) for p in args.inputs] if args.inputs else [Path(args.data) / "cl-scisumm" / "training-40-manual"]
    limit = 0 if args.inputs else args.limit
    runs = [RUNS[("1", "2", "dask").index(r)] for r in args.runs]
    work = Path(tempfile.mkdtemp(prefix="bench_annotate-"))
    rows, outputs = [], {}
    try:
        sizes = args.papers or [None]
        for size in sizes:
            inputs = [repeated_corpus(corpus, size, work / f"corpus{size}")] if size else corpus
            for repeat in range(args.repeats):
                for name, options in runs:
                    out = work / str(len(rows))
                    t0 = time.perf_counter()
                    with peak_memory() as memory:
                        summary = annotate_corpus(args.pipeline, inputs, out, AnnotateSettings(
                            limit=0 if size else limit, batch_size=args.batch_size, **options))
                    wall = time.perf_counter() - t0
                    timing = summary["timing"]
                    rows.append({"run": name, "corpus_papers": size, "repeat": repeat + 1,
                                 "papers": summary["papers"], "sentences": summary["sentences"],
                                 "seconds": timing["seconds"], "papers_per_second": timing["papers_per_second"],
                                 "seconds_per_paper": round(timing["seconds"] / max(summary["papers"], 1), 3),
                                 "sentences_per_second": timing["sentences_per_second"],
                                 "wall_seconds": round(wall, 1), "peak_memory_mb": round(memory["mb"])})
                    outputs.setdefault(size, []).append((out / "annotations.jsonl").read_bytes())
                    shutil.rmtree(out, ignore_errors=True)
                    print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    identical = all(o == same[0] for same in outputs.values() for o in same)
    agreement = [label_agreement(same[0], o) for same in outputs.values() for o in same[1:]]
    same_labels = all(a["same_labels"] for a in agreement)
    medians = {name: statistics.median(r["sentences_per_second"] for r in rows
                                       if r["run"] == name and r["corpus_papers"] == rows[0]["corpus_papers"])
               for name, _ in runs}
    first = medians[runs[0][0]]
    report = {"pipeline": str(args.pipeline), "corpus": [str(c) for c in corpus], "limit": limit,
              "median_sentences_per_second": medians,
              "speedup_over_first": {name: round(v / first, 3) for name, v in medians.items()},
              "batch_size": args.batch_size, "identical_outputs": identical, "same_labels": same_labels,
              "agreement": agreement, "machine": platform.platform(),
              "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "runs": rows}
    print("\n| run | papers | sentences | seconds | s/paper | sentences/s | wall s | peak MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['run']} | {r['papers']} | {r['sentences']} | {r['seconds']:.1f} | {r['seconds_per_paper']:.3f} | "
              f"{r['sentences_per_second']:.0f} | {r['wall_seconds']:.1f} | {r['peak_memory_mb']} |")
    print(f"\nmedian sentences/s: {medians}; over the first run: {report['speedup_over_first']}")
    print(f"identical outputs: {identical}; the same sentences and labels: {same_labels}; {agreement}")
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf8")
    agree = all(a["same_sentences"] and a["equal_label_share"] >= args.min_label_share for a in agreement)
    if not agree:
        print(f"runs disagree: other sentences, or under {args.min_label_share:.1%} of the labels the same")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
