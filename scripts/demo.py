"""make demo: label the sentences of a sample paper with their rhetorical
function, by phrase n-grams that hold the sentence root.

    python scripts/demo.py [paper.txt]

The phrase list is the Iwatsuki & Aizawa (2021) formulaic-expression
database, found in $SPACY_RHETORIC_DATA (default: ../shared/data next to the
repository). The paper text is split into paragraphs at blank lines; a short
paragraph without final punctuation is taken as a section heading.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import spacy_rhetoric  # noqa: E402
from spacy_rhetoric.util import load_parser  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SPACY_RHETORIC_DATA", REPO.parent / "shared" / "data"))
PHRASES = DATA / "iwatsuki2021-fe-database-cl"
SAMPLE = REPO / "assets" / "sample_paper.txt"


def paragraphs(text):
    """(section, paragraph) pairs; headings set the section of what follows."""
    section = None
    for block in text.split("\n\n"):
        block = " ".join(block.split())
        if not block:
            continue
        if len(block) < 60 and block[-1] not in ".!?":
            section = block
            continue
        yield section, block


def main(argv):
    paper = Path(argv[1]) if len(argv) > 1 else SAMPLE
    if not PHRASES.exists():
        sys.exit(
            f"Phrase database not found at {PHRASES}: set SPACY_RHETORIC_DATA to the directory "
            f"holding iwatsuki2021-fe-database-cl/"
        )
    print(f"spacy_rhetoric {spacy_rhetoric.__version__}")
    nlp = load_parser("en_core_web_sm", exclude=["ner"])
    labeler = nlp.add_pipe("rhetoric_phrase_labeler", config={"n": 5})
    labeler.initialize(phrases=str(PHRASES), nlp=nlp)

    pieces = list(paragraphs(paper.read_text(encoding="utf8")))
    n_sents = n_labeled = 0
    current = object()
    for (section, _), doc in zip(pieces, nlp.pipe(text for _, text in pieces)):
        if section != current:
            print(f"\n== {section or '(no heading)'} ==")
            current = section
        for sent in doc.sents:
            n_sents += 1
            if sent._.phrase_label is None:
                print(f"  -  {sent.text}")
                continue
            n_labeled += 1
            print(f"  +  {sent.text}")
            print(f"       label: {sent._.phrase_label}")
            print(f"       n-gram: \"{sent._.phrase_match.text}\" (root: {sent.root.text})")
    print(f"\n{n_labeled} of {n_sents} sentences labeled from {paper}")


if __name__ == "__main__":
    main(sys.argv)
