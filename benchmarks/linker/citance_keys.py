"""CL-SciSumm citance keys: how many citances the task 1a evaluation forms from
the annotation rows, keyed by the annotators' citance numbers (the earlier keying)
and by the citing sentence (``citret.evaluation.key_citances``), and how many
keys merge different citing sentences or split one. Prints a Markdown table
(docs/notes/benchmark-log.md, "Citance keys").

    .venv/bin/python benchmarks/linker/citance_keys.py [--data ../shared/data]

A citing sentence is the normalised citation text
(``evaluation.normalise_citance``) within one citing article; a key "merges"
when its rows hold two texts neither of which contains the other, and a text
is "split" when two keys of one citing article hold it.
"""
import argparse
from collections import defaultdict
from pathlib import Path

from spacy_rhetoric.citret.evaluation import citance_key, key_citances, normalise_citance, same_citance
from spacy_rhetoric.readers.clscisumm import iter_topics, read_topic_annotations


def audit(groups):
    """(keys merging different citing sentences, citing sentences split over keys)."""
    merging = 0
    holders = defaultdict(set)
    for key, rows in groups.items():
        texts = sorted({normalise_citance(r.citation_text) for r in rows} - {""})
        if any(not same_citance(a, b) for i, a in enumerate(texts) for b in texts[i + 1:]):
            merging += 1
        for text in texts:
            holders[(key[0], key[1], text)].add(key)
    return merging, sum(1 for keys in holders.values() if len(keys) > 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    args = parser.parse_args()
    print("| topics | rows | keys by number (merging / split) | citances by citing sentence (merging / split) "
          "| rows not keyed |")
    print("| --- | --- | --- | --- | --- |")
    for name in ("training-40-manual", "scisummnet-2019-auto"):
        root = args.data / "cl-scisumm" / name
        records = []
        topics = list(iter_topics(root))
        for topic in topics:
            records.extend(read_topic_annotations(topic)[0])
        by_number = defaultdict(list)
        for rec in records:
            by_number[citance_key(rec)].append(rec)
        citances, unkeyed = key_citances(records)
        old = audit(by_number)
        new = audit({c.key: c.records for c in citances})
        print(f"| {name} ({len(topics)}) | {len(records):,} | {len(by_number):,} ({old[0]} / {old[1]}) | "
              f"{len(citances):,} ({new[0]} / {new[1]}) | {len(unkeyed):,} |")


if __name__ == "__main__":
    main()
