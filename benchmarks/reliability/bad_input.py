"""Bad-input probes: ordinary mistakes a user makes with the command line, what
they see now and the exit code. Prints two Markdown tables (docs/notes/benchmark-log.md,
"Bad input"): the ordinary mistakes, then the hostile probes (``bad_input_hostile.py``,
with the file, corpus-job and reading probes in the same table), each with its
command, what the user sees, the exit code, the wall time and whether it is
OK. Then the limits (`--only-limits`, ``bad_input_limits.py``): pathological
PDFs, a 1 MB sentence and GROBID servers that never answer, drip or answer
50 MB, with wall time and peak RSS.

    .venv/bin/python benchmarks/reliability/bad_input.py [--data ../shared/data] [--only-hostile] [--only-limits]
        [--only-jobs]

The reading probes (``bad_input_reading.py``) and the corpus jobs' (``bad_input_jobs.py``)
also run alone: `--only-reading`, `--only-jobs`.

Every probe runs `python -m spacy_rhetoric ...` in a scratch directory with
tiny inputs written here (a two-abstract CSAbstruct file, an untrained
blank-pipeline classifier for `evaluate`/`align`), so it needs no trained model;
the runner and the shared helpers are in ``bad_input_common.py``.
"""
import argparse
import sys
import tempfile
from pathlib import Path
from typing import Optional, Tuple

from bad_input_common import make_model, run
from bad_input_hostile import run_hostile_probes
from bad_input_jobs import run_job_probes
from bad_input_limits import run_limit_probes
from bad_input_reading import run_read_only

ABSTRACT = (
    '{"abstract_id": %d, "sentences": ["We study parsing.", "We propose a method.", '
    '"Results improve."], "labels": ["background", "objective", "result"], "confs": [1, 1, 1]}\n'
)


def write_report(path: Optional[Path], **summaries: Tuple[int, int]) -> None:
    """``--report``: each table's probes and how many are OK, as JSON."""
    if path is None:
        return
    import json
    import time

    out = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv)}
    for name, (ok, total) in summaries.items():
        out[name] = {"probes": total, "ok": ok, "all_ok": ok == total}
    path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    parser.add_argument("--only-hostile", action="store_true", help="Only the hostile probes")
    parser.add_argument("--only-reading", action="store_true", help="Only the reading probes: model folders with "
                        "code, escape sequences, runaway rules, tampered pipelines, CJK, '<' text, long names, "
                        "files that are not papers")
    parser.add_argument("--only-limits", action="store_true", help="Only the limits: pathological PDFs, a 1 MB "
                        "sentence, GROBID that never answers (time and peak memory)")
    parser.add_argument("--only-jobs", action="store_true", help="Only the hostile probes of the corpus jobs: "
                        "FIFOs, sockets, link loops and unreadable files among the inputs, --workers, interrupts")
    parser.add_argument("--report", type=Path, default=None, help="Write each table's probes and OK count as JSON")
    args = parser.parse_args()
    data = args.data.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bad-input-"))
    if args.only_reading:
        run_read_only(tmp)
        return
    if args.only_jobs:
        run_job_probes(tmp)
        return
    if args.only_limits:
        write_report(args.report, limits=run_limit_probes(tmp))
        return
    if args.only_hostile:
        make_model(tmp / "model")
        write_report(args.report, hostile=run_hostile_probes(tmp, data))
        return
    (tmp / "a.jsonl").write_text(ABSTRACT % 1 + ABSTRACT % 2, encoding="utf8")
    (tmp / "empty.jsonl").write_text("", encoding="utf8")
    (tmp / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
    (tmp / "paper.txt").write_text("We study parsing. We propose a method. Results improve.\n", encoding="utf8")
    (tmp / "indir").mkdir()
    (tmp / "indir" / "p.txt").write_text("We propose a method.\n", encoding="utf8")
    (tmp / "kv.bin").write_bytes(b"\x80\x04not vectors")
    pmc = sorted((data / "pmc-sents-full").rglob("*.jsonl"))
    run(["convert", "csabstruct", "a.jsonl", "a.spacy"], tmp)
    make_model(tmp / "model")
    unwritable = "/proc/spacy-rhetoric-probe/out"
    probes = [
        ("convert of an empty file", ["convert", "csabstruct", "empty.jsonl", "o.spacy"]),
        ("convert of a binary file", ["convert", "csabstruct", "binary.jsonl", "o.spacy"]),
        ("convert of a PMC file with the csabstruct reader",
         ["convert", "csabstruct", str(pmc[0]) if pmc else "missing.jsonl", "o.spacy", "--limit", "50"]),
        ("convert with output = input", ["convert", "csabstruct", "a.jsonl", "a.jsonl"]),
        ("convert of a missing input", ["convert", "csabstruct", "nope.jsonl", "o.spacy"]),
        ("convert of a directory", ["convert", "csabstruct", "indir", "o.spacy"]),
        ("convert to an unwritable path", ["convert", "csabstruct", "a.jsonl", unwritable + ".spacy"]),
        ("split with train = test", ["split", "a.spacy", "tr.spacy", "tr.spacy"]),
        ("split with train = input", ["split", "a.spacy", "a.spacy", "te.spacy"]),
        ("label with no usable input", ["label", "empty.jsonl", "-o", "lab"]),
        ("label --n-process 0", ["label", "indir", "-o", "lab", "--n-process", "0"]),
        ("label --batch-size 0", ["label", "indir", "-o", "lab", "--batch-size", "0"]),
        ("evaluate on an empty set", ["evaluate", "model", "empty.spacy"]),
        ("evaluate --tsne to an unwritable path", ["evaluate", "model", "a.spacy", "--tsne", unwritable + ".png"]),
        ("evaluate --label-field unknown", ["evaluate", "model", "a.spacy", "--label-field", "nope"]),
        ("align -k 0", ["align", "paper.txt", "paper.txt", "-m", "model", "-k", "0"]),
        ("link -k 0", ["link", "paper.txt", "paper.txt", "-k", "0"]),
        ("link --vectors not a vectors file", ["link", "paper.txt", "paper.txt", "--vectors", "kv.bin"]),
        ("link --evaluate --topics unknown",
         ["link", "--evaluate", str(data / "cl-scisumm" / "training-40-manual"), "--topics", "NOPE-1"]),
    ]
    from spacy.tokens import DocBin

    DocBin().to_disk(tmp / "empty.spacy")
    print("| probe | what the user sees | exit |")
    print("| --- | --- | --- |")
    for name, argv in probes:
        code, seen = run(argv, tmp)
        print(f"| {name} (`{' '.join(argv[:1])}`) | {seen.replace('|', '/')} | {code} |")
    print("\n### Hostile probes\n")
    hostile = run_hostile_probes(tmp, data)
    print("\n### Limits\n")
    write_report(args.report, hostile=hostile, limits=run_limit_probes(tmp))


if __name__ == "__main__":
    main()
