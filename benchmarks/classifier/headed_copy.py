"""A copy of a gold ``.spacy`` file whose every sentence sits under one
heading (default "Abstract"), as a paper reader gives an abstract: the input of
the "with headings" row of the plain-text check (docs/notes/benchmark-log.md,
"Full papers"). The section is left to the pipeline's section tagger.

    python benchmarks/classifier/headed_copy.py corpus/csabstruct_dev.spacy corpus/csabstruct_dev_abstract.spacy
"""
import argparse
from pathlib import Path

import spacy
from spacy.tokens import DocBin

from spacy_rhetoric.extensions import HEADING, set_span_values
from spacy_rhetoric.io import atomic_path, check_input, check_output


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--heading", default="Abstract")
    args = parser.parse_args(argv)
    source = check_input(args.input, what="input")
    output = check_output(args.output, what="output", inputs=[source])
    nlp = spacy.blank("en")
    out = DocBin(store_user_data=True)
    for doc in DocBin().from_disk(source).get_docs(nlp.vocab):
        sents = list(doc.sents)
        set_span_values(doc, HEADING, sents, [args.heading] * len(sents))
        out.add(doc)
    with atomic_path(output) as tmp:
        out.to_disk(tmp)
    print(f"{len(out)} docs -> {output}")


if __name__ == "__main__":
    main()
