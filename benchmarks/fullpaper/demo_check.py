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

``--paper ../shared/data/paper-formats/grobid-tei/N18-3011.tei.xml`` checks
the GROBID TEI of a computer-science systems paper (Ammar et al., 2018,
"Construction of the Literature Graph in Semantic Scholar") instead, with
the list OWN_WORK_N18_3011: sentences of its sections 2-4 that describe the
authors' own system (``method``: its graph, data pipeline, models and
training) and the experiments it reports (``result``). Own work written as
neutral present-tense description is what a classifier trained on abstracts
and materials-science papers tends to call background.

    python benchmarks/fullpaper/demo_check.py .demo/pipeline [--out benchmarks/fullpaper/results/demo_check.json]
    python benchmarks/fullpaper/demo_check.py .demo/pipeline --paper ../shared/data/paper-formats/grobid-tei/N18-3011.tei.xml
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

OWN_WORK_N18_3011 = {
    # section 2, the literature graph: what the authors built
    "The literature graph is a property graph with directed edges": "method",
    "Paper nodes are associated with a set of attributes": "method",
    "We obtain metadata and PDF files of papers via partnerships": "method",
    "We deterministically remove duplicate papers based on string similarity": "method",
    "Each node of this type represents a unique author": "method",
    "We instantiate a directed citation edge from paper nodes": "method",
    "We instantiate a directed edge from an extracted entity mention node": "method",
    # section 3, metadata extraction
    "To fill in this gap, we built the Sci-enceParse system": "method",
    "We split each PDF into individual pages": "method",
    "We normalize the token-level features before feeding them": "method",
    "We use a heuristic labeling process that finds the strings": "method",
    "At test time, we use Viterbi decoding": "method",
    # section 4, entity extraction and linking
    "In order to focus on more salient entities in a given paper, we only use the title and abstract": "method",
    "We use the BILOU scheme to encode labels at the token level": "method",
    "We fix the LM parameters during training of the entity extraction model": "method",
    "Two instances are trained on the BC5CDR": "method",
    "The third instance is trained on mention labels induced from Wikipedia": "method",
    "We first identify a set of candidate entities": "method",
    "Then, we rank the candidate entities based on a score": "method",
    "We use the same encoder for the mention surface form": "method",
    # the experiments it reports
    "Table 2 shows the results based on 500 papers": "result",
    "In both domains, the statistical approach gives the highest precision": "result",
    "The hybrid approach consistently gives the highest yield": "result",
    "The TagMe off-the-shelf library used for the CS domain gives surprisingly good results": "result",
    "However, the MetaMap Lite off-the-shelf library we used for the biomedical domain": "result",
    "Table 3 compares three variants of our entity extraction model": "result",
    "The first line omits the LM embeddings": "result",
    "The third line shows that creating an ensemble of 15 models further improves": "result",
    "Table 4 compares the performance of the most-frequent-entity baseline": "result",
}
CHECKS = {"N18-3011.tei.xml": OWN_WORK_N18_3011}  # by file name; any other paper: OBVIOUS (the packaged sample)


def check(nlp, paper: Path) -> dict:
    from spacy_rhetoric.apps.demo import read_paper_doc

    expected = CHECKS.get(paper.name, OBVIOUS)
    doc = nlp(read_paper_doc(nlp, paper))
    rows, found = [], set()
    for sent in doc.sents:
        text = sent.text.strip()
        key = next((k for k in expected if text.startswith(k)), None)
        if key is None:
            continue
        found.add(key)
        label = sent._.rhetoric_label
        gold = expected[key] if isinstance(expected[key], tuple) else (expected[key],)
        rows.append({"sentence": text, "gold": list(gold), "right": label in gold, "predicted": label,
                     "score": (sent._.rhetoric_scores or {}).get(label), "section": sent._.rhetoric_section})
    missing = sorted(set(expected) - found)
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
    for gold in ("method", "result"):
        own = [r for r in result["rows"] if r["gold"] == [gold]]
        if own:
            print(f"  gold {gold}: {sum(r['right'] for r in own)} / {len(own)} right, "
                  f"{sum(r['predicted'] == 'background' for r in own)} called background")
    if args.out:
        Path(args.out).write_text(json.dumps(result | {"pipeline": args.pipeline}, indent=2))


if __name__ == "__main__":
    main()
