"""Distant-supervision corpus: size of the set and labeling speed.

Two parts, each printing a JSON report (and writing it to --report):

``full``  builds the distant set over every CL-SciSumm reference paper
          (``spacy-rhetoric label`` = ``spacy_rhetoric.corpus_builder.build_corpus``) and
          reports its size: papers, sentences, labeled, labels, per-label
          counts, train/valid sizes. Resumable: rerun after an interruption.

``speed`` labels the same subset (the first ``--limit`` inputs in key order)
          three times in one run — ``nlp.pipe`` with n_process=1, with
          n_process=2, and on a 2-worker Dask LocalCluster (1 thread each) —
          from scratch each time, checks the three outputs are identical, and
          reports words/s. "words" are non-space tokens of the labeled
          sentences; the clock excludes loading the pipeline in the main
          process (Dask: workers load it before the clock starts) and includes
          reading inputs, worker start-up (n_process=2), labeling and writing
          the shards; the merge step is timed separately.

    nice -n 10 python benchmarks/labels/bench_label_corpus.py full  --data ../shared/data --out corpus/distant
    nice -n 10 python benchmarks/labels/bench_label_corpus.py speed --data ../shared/data --out corpus/bench --limit 40
"""
import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _outputs(out: Path):
    return {name: (out / name).read_bytes() for name in ("train.jsonl", "valid.jsonl")}


def run_full(args) -> dict:
    from spacy_rhetoric.corpus_builder import BuildSettings, build_corpus

    t0 = time.perf_counter()
    summary = build_corpus(
        [Path(args.data) / "cl-scisumm"], args.out, Path(args.data) / "iwatsuki2021-fe-database-cl",
        BuildSettings(n=args.n, n_process=args.n_process, batch_size=args.batch_size, merge_only=args.merge_only),
        show_progress=True,
    )
    wall = time.perf_counter() - t0
    split = summary["split"]
    return {
        "part": "full",
        "inputs": summary["inputs"],
        "inputs_skipped": summary["inputs_skipped"],
        "skipped": summary["skipped"],
        "papers": summary["papers"],
        "sentences": summary["sentences"],
        "empty_sentences": summary["empty_sentences"],
        "words": summary["words"],
        "labeled": summary["labeled"],
        "duplicates_removed": summary["duplicates_removed"],
        "labeled_kept": summary["labeled_kept"],
        "n_labels": summary["n_labels"],
        "per_label": summary["per_label"],
        "train_sentences": split["train_sentences"],
        "train_papers": split["train_papers"],
        "valid_sentences": split["valid_sentences"],
        "valid_papers": split["valid_papers"],
        "per_label_valid": split["per_label_valid"],
        "inputs_resumed": summary["inputs_resumed"],
        "inputs_pending (not labeled yet)": summary["inputs_pending"],
        "label_seconds_this_run": summary["timing"]["label_seconds"],
        "words_per_second_this_run": summary["timing"]["words_per_second"],
        "wall_seconds_this_run": round(wall, 1),
        "n_process": args.n_process,
    }


def run_speed(args) -> dict:
    from spacy_rhetoric.corpus_builder import BuildSettings, build_corpus

    configs = [
        ("nlp.pipe n_process=1", dict(n_process=1)),
        ("nlp.pipe n_process=2", dict(n_process=2)),
        ("Dask LocalCluster 2 workers x 1 thread", dict(scheduler="local", workers=2)),
    ]
    rows, outputs = [], []
    for i, (name, kw) in enumerate(configs):
        out = Path(args.out) / f"run{i}"
        t0 = time.perf_counter()
        summary = build_corpus(
            [Path(args.data) / "cl-scisumm"], out, Path(args.data) / "iwatsuki2021-fe-database-cl",
            BuildSettings(n=args.n, batch_size=args.batch_size, limit=args.limit, overwrite=True, **kw),
        )
        wall = time.perf_counter() - t0
        timing = summary["timing"]
        rows.append({
            "config": name,
            "inputs": summary["inputs_labeled_this_run"],
            "sentences": summary["sentences"],
            "words": timing["words_labeled_this_run"],
            "label_seconds": timing["label_seconds"],
            "words_per_second": timing["words_per_second"],
            "wall_seconds_incl_load_and_merge": round(wall, 1),
            "labeled": summary["labeled"],
        })
        outputs.append(_outputs(out))
        print(json.dumps(rows[-1]), flush=True)
    base = rows[0]["words_per_second"]
    for row in rows:
        row["speedup_vs_n_process_1"] = round(row["words_per_second"] / base, 2)
    return {
        "part": "speed",
        "limit": args.limit,
        "rows": rows,
        "outputs_identical": all(o == outputs[0] for o in outputs[1:]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=["full", "speed"])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--n-process", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--merge-only", action="store_true", help="full: merge the shards that exist, label nothing")
    ap.add_argument("--report", default=None, help="write the JSON report here too")
    args = ap.parse_args()
    report = run_full(args) if args.part == "full" else run_speed(args)
    report.update({
        "machine": f"{platform.node()} {os.cpu_count()} CPU {platform.machine()}",
        "python": sys.version.split()[0],
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "load_average_1_5_15": list(os.getloadavg()),
    })
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(text + "\n", encoding="utf8")


if __name__ == "__main__":
    main()
