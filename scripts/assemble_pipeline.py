"""Assemble the final spacy_rhetoric pipeline from trained parts and write it.

    python scripts/assemble_pipeline.py OUTPUT_DIR --parser en_core_web_sm \
        --phrases assets/data/iwatsuki2021-fe-database-cl \
        --classifier training/small/classifier/model-best \
        --encoder training/small/encoder/model-best \
        --fine-classifier training/small/fine_classifier/model-best --name rhetoric_pipeline --version 0.0.1

Result: the English parser pipeline (tagger, lemmatizer, parser, ... for
sentence boundaries, lemmas and the dependency roots the labeler needs)
+ ``rhetoric_phrase_labeler`` (initialised with the phrase list)
+ ``rhetoric_function_classifier`` (sourced from the classifier pipeline)
+ ``rhetoric_sentence_encoder`` (sourced from the encoder pipeline)
+ optionally a fine-function classifier (``rhetoric_fine_classifier`` of
  configs/fine_classifier_cpu.cfg, writing ``sent._.rhetoric_fine_label``).
Two classifiers must write different fields (``label_field``); that is
checked before anything is written.

A sourced component that listens to a shared ``tok2vec``/``transformer`` of
its training pipeline gets its own copy of that layer first
(``nlp.replace_listeners``), so it runs without its old upstream and cannot
clash with the parser's own ``tok2vec``. Component names that exist already
are prefixed (``rhetoric_``). The parser's ``ner`` is excluded by default.
"""
import argparse
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

LISTENERS = ("spacy.Tok2VecListener.v1", "spacy-transformers.TransformerListener.v1")


def listener_paths(config: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, str]]:
    """``(dotted path, upstream name)`` of every listener block in a
    component config (e.g. ``("model.tok2vec", "tok2vec")``)."""
    for key, value in config.items():
        if isinstance(value, dict):
            path = f"{prefix}{key}"
            if value.get("@architectures") in LISTENERS:
                yield path, value.get("upstream", "*")
            else:
                yield from listener_paths(value, path + ".")


def detach_listeners(nlp, pipe_name: str) -> List[str]:
    """Give ``pipe_name`` its own copies of the upstream layers it listens to."""
    config = nlp.config["components"][pipe_name]
    replaced = []
    for path, upstream in list(listener_paths(config)):
        candidates = [upstream] if upstream != "*" else [
            n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory in ("tok2vec", "transformer")
        ]
        for name in candidates:
            if name in nlp.pipe_names and pipe_name in getattr(nlp.get_pipe(name), "listening_components", []):
                nlp.replace_listeners(name, pipe_name, [path])
                replaced.append(f"{pipe_name}.{path} <- {name}")
                break
        else:
            raise ValueError(f"{pipe_name}: no upstream component found for the listener at {path}")
    return replaced


def find_component(nlp, factory: str) -> str:
    names = [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == factory]
    if len(names) != 1:
        raise ValueError(f"expected one {factory} component, found {names} in {nlp.pipe_names}")
    return names[0]


def assemble(
    *,
    parser: str,
    phrases: Optional[Path],
    classifier: Optional[Path],
    encoder: Optional[Path],
    exclude: List[str],
    n: int = 5,
    fine_classifier: Optional[Path] = None,
):
    import spacy

    import spacy_rhetoric  # noqa: F401 - factories, extensions
    from spacy_rhetoric.util import load_parser

    nlp = load_parser(parser, exclude=exclude)
    report = {"parser": f"{parser} ({', '.join(nlp.pipe_names)})"}
    if phrases is not None:
        labeler = nlp.add_pipe("rhetoric_phrase_labeler", config={"n": n})
        labeler.initialize(phrases=str(phrases), nlp=nlp)
        report["rhetoric_phrase_labeler"] = f"{len(labeler.labels)} labels from {phrases}"
    parts = ((classifier, "rhetoric_function_classifier"), (fine_classifier, "rhetoric_function_classifier"),
             (encoder, "rhetoric_sentence_encoder"))
    for path, factory in parts:
        if path is None:
            continue
        source = spacy.load(path)
        name = find_component(source, factory)
        detached = detach_listeners(source, name)
        new_name = name if name not in nlp.pipe_names else f"rhetoric_{name}"
        nlp.add_pipe(name, name=new_name, source=source)
        report[new_name] = f"from {path}" + (f" (own copy of {', '.join(detached)})" if detached else "")
    fields = {}
    for name in nlp.pipe_names:
        if nlp.get_pipe_meta(name).factory == "rhetoric_function_classifier":
            field = nlp.get_pipe(name).label_field
            if field in fields:
                raise ValueError(f"{fields[field]} and {name} both write the sentence field {field!r}: train the "
                                 f"fine classifier with label_field = \"fine_label\" (configs/fine_classifier_cpu.cfg)")
            fields[field] = name
    return nlp, report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--parser", default="en_core_web_sm")
    parser.add_argument("--phrases", type=Path, default=None, help="Phrase list for rhetoric_phrase_labeler")
    parser.add_argument("--n", type=int, default=5, help="n-gram length of the labeler")
    parser.add_argument("--classifier", type=Path, default=None, help="Trained pipeline with rhetoric_function_classifier")
    parser.add_argument("--encoder", type=Path, default=None, help="Trained pipeline with rhetoric_sentence_encoder")
    parser.add_argument("--fine-classifier", type=Path, default=None,
                        help="Trained pipeline with a fine-function classifier (label_field fine_label)")
    parser.add_argument("--exclude", default="ner", help="Comma-separated parser components to leave out")
    parser.add_argument("--name", default="rhetoric_pipeline", help="meta.json name (spacy package adds the lang_ prefix)")
    parser.add_argument("--version", default="0.0.1")
    args = parser.parse_args(argv)

    exclude = [e for e in args.exclude.split(",") if e]
    nlp, report = assemble(parser=args.parser, phrases=args.phrases, classifier=args.classifier,
                           encoder=args.encoder, exclude=exclude, n=args.n,
                           fine_classifier=args.fine_classifier)
    nlp.meta["name"] = args.name
    nlp.meta["version"] = args.version
    nlp.meta["description"] = (
        "spacy_rhetoric: sentence boundaries and parse (" + args.parser + "), rhetorical phrase labels, "
        "coarse rhetorical function classifier"
        + (", fine communicative-function classifier" if args.fine_classifier else "")
        + " and functional sentence embeddings"
    )
    # Smoke test before writing: every component runs on a two-sentence text.
    doc = nlp("Parsing is an important task. We propose a new method for parsing.")
    assert len(list(doc.sents)) >= 1
    args.output.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(args.output)
    for key, value in report.items():
        print(f"{key}: {value}")
    print(f"pipeline {nlp.pipe_names} -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
