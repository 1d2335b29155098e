"""Where `annotate`'s time goes: each component of a trained pipeline timed over the first ``--papers``
GROBID TEI papers of ``paper-formats/`` (each component over the whole batch, in pipeline order). The
fine-tuned member's number formats (float32, bfloat16, int8) are compared by ``bench_precision.py``.

    OMP_NUM_THREADS=2 python benchmarks/speed/bench_member.py --pipeline .demo/pipeline [--data ../shared/data]
"""
import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--papers", type=int, default=4)
    args = parser.parse_args(argv)

    import spacy

    from spacy_rhetoric.readers.papers import read_paper

    nlp = spacy.load(args.pipeline)
    tei = sorted((args.data / "paper-formats" / "grobid-tei").glob("*.xml"))[: args.papers]
    docs = [read_paper(f, nlp) for f in tei]
    n = sum(1 for d in docs for _ in d.sents)
    print(f"## components over {len(docs)} papers, {n} sentences\n\n| component | s |\n| --- | --- |")
    for name, proc in nlp.pipeline:
        t0 = time.perf_counter()
        docs = list(proc.pipe(docs))
        print(f"| {name} | {time.perf_counter() - t0:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
