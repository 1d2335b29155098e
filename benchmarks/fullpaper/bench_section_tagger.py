"""Accuracy of rhetoric_section_tagger's heading decisions on held-out FeRoSA
headings.

The FeRoSA list (``readers.ferosa``: facet -> category) is split by heading
string (``section_headings.split_headings``: 20 % of the distinct normalised
strings held out, seed 0, so no string is on both sides). A heading
classifier with the shipped settings is trained on the 80 % side only (the
shipped ``assets/section_model.json`` is trained on all rows and is not used
here). Every held-out row is one item, decided on its own (no neighbouring
headings: FeRoSA has none) by:

* ``keyword rules`` -- the packaged rules alone, unmatched -> method
  (COSAEMB §3.5's "no match -> Methods");
* ``classifier`` -- the classifier alone (argmax);
* ``rules + classifier`` -- ``tagger.tag_heading``: rules first, the
  classifier otherwise, "other" below ``--threshold`` (default as shipped).

Scores: ``spacy_rhetoric.evaluation.scorers.sentence_label_scores`` (accuracy =
F1-micro; per-category P/R/F1; macro F1 over the categories in gold or
predictions).

    OMP_NUM_THREADS=1 python benchmarks/fullpaper/bench_section_tagger.py --out benchmarks/fullpaper/results/section_tagger.json
"""
import argparse
import json
import os
import platform
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TSV = Path(os.environ.get("SPACY_RHETORIC_DATA", REPO.parent / "shared" / "data")) / (
    "ferosa-section-headings/section_mapping.tsv"
)
ORDER = ("introduction", "related work", "method", "results", "conclusion", "other")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--headings", type=Path, default=DEFAULT_TSV)
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threshold", type=float, default=None, help="default: the component's default")
    p.add_argument("--out", type=Path, default=None, help="JSON with every figure")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    from spacy.vocab import Vocab

    from spacy_rhetoric.evaluation.scorers import sentence_label_scores
    from spacy_rhetoric.pipeline.section_tagger import DEFAULT_SECTION_TAGGER, SectionTagger
    from spacy_rhetoric.readers.ferosa import read_ferosa_headings
    from spacy_rhetoric.section_headings import METHOD, parse_heading, split_headings, train_heading_classifier

    threshold = DEFAULT_SECTION_TAGGER["threshold"] if args.threshold is None else args.threshold
    pairs, dropped = read_ferosa_headings(args.headings)
    train, test = split_headings(pairs, test_fraction=args.test_fraction, seed=args.seed)
    t0 = time.time()
    model = train_heading_classifier(train, source=f"{args.headings.name} train side")
    train_s = time.time() - t0
    tagger = SectionTagger(Vocab(), threshold=threshold)
    tagger.model = model

    headings = [h for h, _ in test]
    gold = [c for _, c in test]
    texts = [parse_heading(h).model_text for h in headings]
    matches = [tagger.rules.match(t) for t in texts]
    t0 = time.time()
    systems = {
        "keyword rules (unmatched -> method)": [m.category if m else METHOD for m in matches],
        "classifier": [label for label, _ in model.predict(texts)],
        "rules + classifier (tag_heading)": [tagger.tag_heading(h) for h in headings],
    }
    decide_s = time.time() - t0
    matched = [i for i, m in enumerate(matches) if m is not None]
    results = {
        "headings_file": str(args.headings),
        "dropped": dict(dropped),
        "split": {"test_fraction": args.test_fraction, "seed": args.seed, "train_rows": len(train),
                  "test_rows": len(test), "test_strings": len({t.lower() for t in texts})},
        "test_categories": dict(Counter(gold)),
        "threshold": threshold,
        "rule_coverage": len(matched) / len(test),
        "rule_accuracy_where_matched": (sum(matches[i].category == gold[i] for i in matched) / len(matched)
                                        if matched else None),
        "train_seconds": round(train_s, 1),
        "decide_seconds": round(decide_s, 1),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus".strip(),
        "date": time.strftime("%Y-%m-%d"),
        "systems": {name: sentence_label_scores(gold, pred) for name, pred in systems.items()},
    }
    print(table(results))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf8")


def table(results) -> str:
    counts = results["test_categories"]
    head = ["system", "accuracy", "macro F1"] + [f"F1 {c} ({counts.get(c, 0)})" for c in ORDER]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, scores in results["systems"].items():
        per = scores["per_label"]
        cells = [name, f"{scores['f_micro']:.3f}", f"{scores['f_macro']:.3f}"]
        cells += [f"{per[c]['f']:.3f}" if c in per else "-" for c in ORDER]
        lines.append("| " + " | ".join(cells) + " |")
    split = results["split"]
    lines.append(
        f"\n{split['test_rows']} held-out rows ({split['test_strings']} strings; train {split['train_rows']} rows), "
        f"rules match {results['rule_coverage']:.1%} of them, {results['rule_accuracy_where_matched']:.3f} "
        f"accurate where they match; threshold {results['threshold']}; macro F1 over the categories in gold "
        f"or predictions."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
