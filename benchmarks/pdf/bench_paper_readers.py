"""Paper readers on the paper-formats samples: sentence splitting against
GROBID's own ``<s>`` segmentation of the same paper, false splits after
abbreviations, and reading speed.

* agreement: ``2312.07559.paragraphs.tei.xml`` (no ``<s>``) split by each
  splitter, compared with the ``<s>`` sentences of
  ``2312.07559.sentences.tei.xml`` (same PDF, same GROBID build): exact
  sentence matches (whitespace ignored), precision / recall / F1;
* sentences ending in "Fig." / "cf." / "et al." / "Eq." over all 16
  samples, with and without ``fulltext.unsplit_abbreviations``;
* speed: all 16 samples read with ``read_papers`` (sentencizer), papers/s
  and tokens/s (CPU and wall clock).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pdf/bench_paper_readers.py [--data ../shared/data]
"""
import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

import spacy

from spacy_rhetoric.readers import fulltext
from spacy_rhetoric.readers.papers import read_paper, read_papers

ABBREV_END = re.compile(r"\b(fig|figs|cf|al|eq|eqs|ref|refs)\s?\.$", re.IGNORECASE)


def _key(text: str) -> str:
    return re.sub(r"\s+", "", text)


def agreement(root: Path, nlp, splitter: str) -> dict:
    tei = root / "grobid-tei"
    gold = [_key(s.text) for s in read_paper(tei / "2312.07559.sentences.tei.xml", nlp).sents]
    start = time.perf_counter()
    doc = read_paper(tei / "2312.07559.paragraphs.tei.xml", nlp, fmt="tei", splitter=splitter)
    seconds = time.perf_counter() - start
    pred = [_key(s.text) for s in doc.sents]
    hits = sum((Counter(pred) & Counter(gold)).values())
    p, r = hits / len(pred), hits / len(gold)
    return {"splitter": splitter, "predicted": len(pred), "gold": len(gold), "matches": hits,
            "precision": round(p, 3), "recall": round(r, 3), "f1": round(2 * p * r / (p + r), 3),
            "seconds_incl_loading": round(seconds, 2)}


def samples(root: Path):
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "README.md")


def abbreviation_ends(root: Path, nlp) -> int:
    return sum(1 for doc in read_papers(samples(root), nlp) for s in doc.sents if ABBREV_END.search(s.text))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = args.data / "paper-formats"
    nlp = spacy.blank("en")
    report = {"agreement": [agreement(root, nlp, name) for name in fulltext.SPLITTERS]}
    with_rule = abbreviation_ends(root, nlp)
    original = fulltext.unsplit_abbreviations
    fulltext.unsplit_abbreviations = lambda doc, candidates: None
    try:
        without_rule = abbreviation_ends(root, nlp)
    finally:
        fulltext.unsplit_abbreviations = original
    report["abbreviation_ends"] = {"with_rule": with_rule, "without_rule": without_rule}
    files = samples(root)
    wall, cpu = time.perf_counter(), time.process_time()
    docs = list(read_papers(files, nlp))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    tokens = sum(len(d) for d in docs)
    report["speed"] = {"papers": len(docs), "tokens": tokens, "sentences": sum(len(list(d.sents)) for d in docs),
                       "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                       "papers_per_s_cpu": round(len(docs) / cpu, 1), "tokens_per_s_cpu": round(tokens / cpu)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
