"""Bad-input probes: ordinary mistakes a user makes with the command line, what
they see now and the exit code. Prints a Markdown table (benchmarks/README.md,
"Bad input").

    .venv/bin/python benchmarks/bad_input.py [--data ../shared/data]

Every probe runs `python -m spacy_rhetoric ...` in a scratch directory with
tiny inputs written here (a two-abstract CSAbstruct file, an untrained
blank-pipeline classifier for `evaluate`/`align`), so it needs no trained model.
The "seen" column is the failure line (wasabi's ✘ line, or typer's "Invalid
value" for a bad option), colours stripped and wrapped lines joined.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Tuple

ABSTRACT = (
    '{"abstract_id": %d, "sentences": ["We study parsing.", "We propose a method.", '
    '"Results improve."], "labels": ["background", "objective", "result"], "confs": [1, 1, 1]}\n'
)


def run(args: List[str], cwd: Path, timeout: int = 600) -> Tuple[int, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore",
               TERM="dumb", COLUMNS="200")
    proc = subprocess.run([sys.executable, "-m", "spacy_rhetoric", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + "\n" + proc.stderr)
    text = " ".join(ln.strip().strip("│").strip() for ln in out.splitlines() if ln.strip())
    text = re.sub(r"[╭╮╰╯─]+", " ", text)
    text = re.sub(r"\s+", " ", text)
    match = re.search(r"(✘.*?)(?= [ℹ⚠✔✘] |$)", text) or re.search(r"(Invalid value.*?)(?= Try |$)", text)
    seen = match.group(1) if match else text[-160:]
    seen = re.split(r" \S+: +\d+%", seen)[0].strip()  # a progress bar after the line
    if "Traceback" in out:
        seen = "TRACEBACK: " + seen
    return proc.returncode, seen[:200]


def make_model(path: Path) -> None:
    import spacy

    import spacy_rhetoric  # noqa: F401  (registers the factories)

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    clf = nlp.add_pipe("rhetoric_function_classifier")
    enc = nlp.add_pipe("rhetoric_sentence_encoder")
    for label in ("background", "objective", "result"):
        clf.add_label(label)
        enc.add_label(label)
    nlp.initialize()
    nlp.to_disk(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args()
    data = args.data.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bad-input-"))
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


if __name__ == "__main__":
    main()
