"""CitRet citance linker benchmark on CL-SciSumm task 1a.

Train on the 978 automatically annotated ScisummNet topics + the 30 manual
topics with ``.ann.txt`` files; evaluate on the other 10 manual topics (the
former 2017 test topics, the ones annotated in ``.annv3.txt`` files):
TEST_TOPICS below. Every step is a ``spacy-rhetoric`` command (printed before
it runs), so each ablation row can be re-run on its own.

    python benchmarks/linker/bench_linker.py --max-steps 200            # everything
    python benchmarks/linker/bench_linker.py --only evaluate            # rows only

Steps: ``word2vec`` (Word2Vec on the training topics' reference papers),
``train`` (fine-tune MiniLM with the cosine pair loss, bounded by
--max-steps; resumes from its checkpoint), ``evaluate`` (one
``spacy-rhetoric link --evaluate`` per row, JSON per row in OUT/eval/, then a
Markdown table on stdout).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("SPACY_RHETORIC_DATA", REPO.parent / "shared" / "data")) / "cl-scisumm"
MANUAL = DATA / "training-40-manual"
AUTO = DATA / "scisummnet-2019-auto"
TEST_TOPICS = [
    "C98-1097", "D09-1023", "D10-1058", "N09-1001", "N09-1025",
    "P00-1025", "P07-1040", "W06-3909", "W09-0621", "W11-0815",
]
CLI = [str(Path(sys.executable).parent / "spacy-rhetoric")]


def run(cmd, log=None):
    print("$ " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


def rows(out: Path, encoder: Path, raw_text: bool = False):
    vectors = out / "w2v.bin"
    base = ["link", "--evaluate", MANUAL, "--topics", ",".join(TEST_TOPICS), "-k", "3"]
    ft = ["--encoder", encoder]
    if raw_text:  # the encoder sees raw sentences (WMD still compares pre-processed tokens)
        ft = ft + ["--no-preprocess"]
    return [
        ("MiniLM, not fine-tuned (cosine only)", base + ["--no-wce", "--no-denoise", "--no-wmd"]),
        ("SBERT (fine-tuned MiniLM)", base + ft + ["--no-wce", "--no-denoise", "--no-wmd"]),
        ("SBERT + WCE", base + ft + ["--no-denoise", "--no-wmd"]),
        ("SBERT + WCE + D", base + ft + ["--no-wmd"]),
        ("CitRet (SBERT + WCE + D + WMD)", base + ft + ["--vectors", vectors]),
        ("not fine-tuned + WCE + D + WMD", base + ["--vectors", vectors]),
        ("MiniLM, not fine-tuned, raw text (cosine only)",
         base + ["--no-wce", "--no-denoise", "--no-wmd", "--no-preprocess"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=REPO / "training" / "citret")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--only", choices=["word2vec", "train", "evaluate"], default=None)
    parser.add_argument("--rows", default=None, help="comma-separated row numbers (0-based) to evaluate")
    parser.add_argument("--raw-text", action="store_true",
                        help="fine-tune and evaluate with raw sentences as encoder input (link-train/link --no-preprocess);"
                             " runs go to minilm-raw-<steps>, rows to eval-raw/")
    parser.add_argument("--encoder", type=Path, default=None,
                        help="evaluate this encoder dir instead of the run's final one (e.g. a checkpoint)")
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    topics_arg = ",".join(TEST_TOPICS)
    run_dir = out / (f"minilm-raw-{args.max_steps}" if args.raw_text else f"minilm-{args.max_steps}")
    if args.only in (None, "word2vec") and not (out / "w2v.bin").exists():
        run(CLI + ["link-word2vec", MANUAL, AUTO, "--exclude-topics", topics_arg, "--output", out / "w2v.bin"])
    if args.only in (None, "train") and not (run_dir / "training.json").exists():
        run(CLI + ["link-train", MANUAL, AUTO, "--exclude-topics", topics_arg, "--output", run_dir,
                   "--max-steps", str(args.max_steps), "--batch-size", str(args.batch_size),
                   "--checkpoint-every", "50", "--threads", "1"] + (["--no-preprocess"] if args.raw_text else []))
    if args.only not in (None, "evaluate"):
        return
    eval_dir = out / ("eval-raw" if args.raw_text else "eval")
    eval_dir.mkdir(exist_ok=True)
    table = []
    wanted = None if args.rows is None else {int(r) for r in args.rows.split(",")}
    encoder = args.encoder or run_dir / "encoder"
    for i, (name, cmd) in enumerate(rows(out, encoder, args.raw_text)):
        path = eval_dir / f"row{i}.json"
        if (wanted is None or i in wanted) and not path.exists():
            run(CLI + cmd + ["--output", path])
        if path.exists():
            r = json.loads(path.read_text())
            table.append((name, r))
    print("\n| row | citances read / scored / skipped | union P | R | F1 | per-annotator P | R | F1 "
          "| s / citance |\n" + "| --- " * 9 + "|")
    for name, r in table:
        if "protocols" not in r:  # a row written before both protocols were reported
            print(f"| {name} (old JSON: union only) | {r['citances']} | {r['precision']:.4f} | {r['recall']:.4f} "
                  f"| {r['f1']:.4f} | | | | {r['seconds_per_citance']:.3f} |")
            continue
        c, u, a = r["counts"], r["protocols"]["union"], r["protocols"]["per_annotator"]
        print(f"| {name} | {c['citances_read']} / {c['citances_scored']} / {c['citances_skipped']} "
              f"| {u['precision']:.4f} | {u['recall']:.4f} | {u['f1']:.4f} "
              f"| {a['precision']:.4f} | {a['recall']:.4f} | {a['f1']:.4f} | {r['seconds_per_citance']:.3f} |")
    state = run_dir / "checkpoint" / "trainer_state.json"
    if args.encoder is not None and state.exists():
        st = json.loads(state.read_text())
        print(f"\nencoder {args.encoder}: checkpoint at step {st['step']} of {st['total']} "
              f"({st['step'] * args.batch_size} of {st['pairs']} pairs seen)")
    train_info = run_dir / "training.json"
    if train_info.exists():
        info = json.loads(train_info.read_text())
        print(f"\ntraining: {info['steps']:.0f} steps x batch {info['batch_size']} = "
              f"{info['steps'] * info['batch_size']:.0f} pairs seen of {info['pairs_built']} "
              f"({info['epochs']:.3f} epochs), {info['topics']} topics, "
              f"{info['seconds_this_run']:.0f} s (last run), final loss {info['last_loss']:.4f}")


if __name__ == "__main__":
    main()
