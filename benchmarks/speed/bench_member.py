"""Where `annotate`'s time goes, and what int8 does to the fine-tuned member.

1. Each component of a trained pipeline timed over the first ``--papers`` GROBID TEI papers of
   ``paper-formats/`` (each component over the whole batch, in pipeline order).
2. The same pipeline with its fine-tuned member in int8 (``FinetunedMember.v1`` ``int8``: torch dynamic
   quantization of its linear layers at prediction on a CPU) against float32 on every paper-formats paper:
   the share of sentences with the same label, the largest probability change, each side's label counts
   and sentences/s of the classifier component.

    OMP_NUM_THREADS=2 python benchmarks/speed/bench_member.py --pipeline .demo/pipeline [--data ../shared/data]
"""
import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLASSIFIER = "rhetoric_function_classifier"


def papers(data: Path):
    return sorted(p for p in (data / "paper-formats").rglob("*") if p.is_file() and p.name != "README.md")


def read(nlp, files):
    from spacy_rhetoric.readers.papers import read_paper

    return [read_paper(f, nlp) for f in files]


def run_until(nlp, docs, last: str):
    """``docs`` through the components before ``last``; returns them."""
    for name, proc in nlp.pipeline:
        if name == last:
            break
        docs = list(proc.pipe(docs))
    return docs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--papers", type=int, default=4)
    args = parser.parse_args(argv)

    import spacy

    from spacy_rhetoric.ml.members import fitted_members

    nlp = spacy.load(args.pipeline)
    tei = sorted((args.data / "paper-formats" / "grobid-tei").glob("*.xml"))[: args.papers]
    docs = read(nlp, tei)
    n = sum(1 for d in docs for _ in d.sents)
    print(f"## components over {len(docs)} papers, {n} sentences\n\n| component | s |\n| --- | --- |")
    for name, proc in nlp.pipeline:
        t0 = time.perf_counter()
        docs = list(proc.pipe(docs))
        print(f"| {name} | {time.perf_counter() - t0:.2f} |")

    members = [m for m in fitted_members(nlp.get_pipe(CLASSIFIER).model) if "int8" in m.attrs]
    if not members:
        print("no fine-tuned member: nothing to compare")
        return 0
    ready = run_until(nlp, read(nlp, papers(args.data)), CLASSIFIER)
    clf = nlp.get_pipe(CLASSIFIER)
    out = {}
    for int8 in (False, True):
        for m in members:
            m.attrs["int8"] = int8
        copies = [d.copy() for d in ready]
        t0 = time.perf_counter()
        done = list(clf.pipe(copies))
        seconds = time.perf_counter() - t0
        out[int8] = [(s._.rhetoric_label, s._.rhetoric_scores or {}) for d in done for s in d.sents
                     if s._.rhetoric_label is not None]
        print(f"\nint8={int8}: classifier {len(out[int8]) / seconds:.1f} sentences/s ({seconds:.1f} s)")
    same = sum(a[0] == b[0] for a, b in zip(out[False], out[True]))
    change = max((abs(a[1][k] - b[1].get(k, 0.0)) for a, b in zip(out[False], out[True]) for k in a[1]), default=0)
    print(f"sentences {len(out[False])}; same label {same / max(len(out[False]), 1):.4f}; "
          f"largest probability change {change:.3f}")
    for int8, rows in out.items():
        print(f"int8={int8}: {dict(collections.Counter(label for label, _ in rows))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
