"""Does annotate slow down as a run grows? N small text files through
``annotate`` (``spacy_rhetoric.apps.annotate.annotate_corpus``) with a blank
pipeline (sentencizer only), timing every input as its shard is written
(``on_shard``): the time of the first 1,000 inputs against the last 1,000
(each window measured between shard completions, so start-up and the final
merge are in neither), in wall seconds and in this process's CPU seconds (on
a shared machine the wall time also measures the load). Per-input work is
constant when the ratio is near 1.

    .venv/bin/python benchmarks/reliability/annotate_scaling.py [--files 5000] [--window 1000]
"""
import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000, help="Input files (one short paper each)")
    parser.add_argument("--window", type=int, default=1000, help="Inputs in the first and the last window")
    parser.add_argument("--keep", action="store_true", help="Keep the scratch folder")
    args = parser.parse_args()
    if args.files < 2 * args.window + 1:
        parser.error("--files must be more than twice --window")

    import spacy

    import spacy_rhetoric  # noqa: F401  (extensions)
    from spacy_rhetoric.apps.annotate import annotate_corpus

    tmp = Path(tempfile.mkdtemp(prefix="annotate-scaling-"))
    try:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        nlp.to_disk(tmp / "pipeline")
        src = tmp / "in"
        src.mkdir()
        for i in range(args.files):
            (src / f"p{i:05d}.txt").write_text(f"We propose method {i}. It works on data {i}. Results are good.\n",
                                               encoding="utf8")
        stamps = []
        start = time.perf_counter()
        summary = annotate_corpus(tmp / "pipeline", [src], tmp / "out",
                                  on_shard=lambda inp, header: stamps.append((time.perf_counter(),
                                                                              time.process_time())))
        total = time.perf_counter() - start
        w = args.window
        first, last = (stamps[w][0] - stamps[0][0], stamps[-1][0] - stamps[-1 - w][0])
        first_cpu, last_cpu = (stamps[w][1] - stamps[0][1], stamps[-1][1] - stamps[-1 - w][1])
        result = {
            "files": args.files, "annotated": summary["inputs_annotated"], "window": w,
            "first_window_s": round(first, 3), "last_window_s": round(last, 3),
            "last_over_first": round(last / first, 3),
            "first_window_cpu_s": round(first_cpu, 3), "last_window_cpu_s": round(last_cpu, 3),
            "last_over_first_cpu": round(last_cpu / first_cpu, 3),
            "first_files_per_s": round(w / first, 1), "last_files_per_s": round(w / last, 1),
            "total_s": round(total, 1),
        }
        print(json.dumps(result, indent=2))
        print(f"\nfirst {w}: {first:.2f} s ({w / first:.0f} files/s, {first_cpu:.2f} s CPU); last {w}: {last:.2f} s "
              f"({w / last:.0f} files/s, {last_cpu:.2f} s CPU); last / first = {last / first:.2f} "
              f"(CPU {last_cpu / first_cpu:.2f})")
    finally:
        if args.keep:
            print(f"scratch folder kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
