"""Does a pipeline get the obvious sentences of the packaged sample paper right?

``assets/sample_paper.txt`` is what ``make demo`` shows when no
data directory is there, and what the README prints. OBVIOUS below lists the
sentences a reader labels without hesitation, with that label in the coarse
scheme (background / objective / method / result / other); sentences a reader
could argue about (the outline of the paper, the closing summary, future
work) are not in it. Where CSAbstruct's own annotators split, both labels
count: "In this paper, we present/propose/introduce ..." is objective 75,
method 66, background 37, result 9 times in CSAbstruct train, "The (main)
contribution ..." method 4, objective 3 (counted with a regular expression
over train.jsonl); "Experiments/Results ... show" is result 44 of 47 times.
The script runs the pipeline over the paper the way the
demo does (``demo.read_paper_doc``: headings and sections from the reader)
and prints each listed sentence with gold and predicted label, then the share
right.

    python benchmarks/fullpaper/demo_check.py .demo/pipeline [--out benchmarks/fullpaper/results/demo_check.json]
"""
import argparse
import json
from pathlib import Path

OBVIOUS = {
    "Cross-lingual dependency parsing remains difficult": "background",
    "In this paper, we present a simple method": ("objective", "method"),
    "The parser is trained on projected trees": "method",
    "Experiments on twelve languages show that our approach improves": "result",
    "Dependency parsing is an important task": "background",
    "Many methods have been proposed for parsing languages": "background",
    "However, little attention has been paid": "background",
    "The main contribution of this paper is": ("objective", "method"),
    "We use the Universal Dependencies treebanks": "method",
    "We assume that a bilingual dictionary": "method",
    "The projected trees are filtered": "method",
    "Table 2 shows the results": "result",
    "Our model outperforms the baseline": "result",
    "It is interesting to note that the largest gains": "result",
    "As shown in Figure 3, the accuracy increases": "result",
    "We would like to thank the anonymous reviewers": "other",
}


def check(nlp, paper: Path) -> dict:
    from spacy_rhetoric.apps.demo import read_paper_doc

    doc = nlp(read_paper_doc(nlp, paper))
    rows, found = [], set()
    for sent in doc.sents:
        text = sent.text.strip()
        key = next((k for k in OBVIOUS if text.startswith(k)), None)
        if key is None:
            continue
        found.add(key)
        label = sent._.rhetoric_label
        gold = OBVIOUS[key] if isinstance(OBVIOUS[key], tuple) else (OBVIOUS[key],)
        rows.append({"sentence": text, "gold": list(gold), "right": label in gold, "predicted": label,
                     "score": (sent._.rhetoric_scores or {}).get(label), "section": sent._.rhetoric_section})
    missing = sorted(set(OBVIOUS) - found)
    if missing:
        raise SystemExit(f"sentences not found in {paper}: {missing}")
    right = sum(r["right"] for r in rows)
    return {"paper": str(paper), "right": right, "total": len(rows), "share": right / len(rows), "rows": rows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pipeline")
    p.add_argument("--paper", default=None, help="default: the packaged sample paper")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    import spacy

    from spacy_rhetoric.apps.demo import sample_paper

    nlp = spacy.load(args.pipeline)
    result = check(nlp, Path(args.paper) if args.paper else sample_paper())
    for r in result["rows"]:
        mark = "ok " if r["right"] else "XX "
        print(f"{mark} {'|'.join(r['gold']):<16} {str(r['predicted']):<10} {r['score'] or 0:.2f}  [{r['section']}] "
              f"{r['sentence'][:70]}")
    print(f"{result['right']} / {result['total']} obvious sentences right ({result['share']:.3f})")
    if args.out:
        Path(args.out).write_text(json.dumps(result | {"pipeline": args.pipeline}, indent=2))


if __name__ == "__main__":
    main()
