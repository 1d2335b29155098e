"""Refit the closed-form members of saved full-paper classifiers
(``FullPaperSentenceClassifier.v3``: ``ml/fitted.py``, ``ml/finetuned.py``) with
other settings, keeping the trained network as it is.

The fitted members take no part in training (the network's loss, its random
numbers and its steps are the same with or without them) and are fitted after
the network is initialized, so a pipeline trained with the new settings from
the start has the same network and the same fitted members as its refit copy:
the refit skips the network's training when only a member's settings change
(e.g. the per-fold models of ``benchmarks/run_fullpaper_cv.sh``).

    python benchmarks/refit_fitted.py --cv-dir training/fullpaper_cv4 --output-dir training/fullpaper_cv5 \\
        --set normalize_digits=true --members tfidf_expert tfidf_expert_others

For each fold: loads ``<cv-dir>/<fold>/model/model-last`` with the
architecture settings of ``--set`` (the saved config is updated), refits the
named members (default: all) on ``<cv-dir>/<fold>/train.spacy`` and writes
``<output-dir>/<fold>/model/model-last``.
"""
import argparse
import sys
from pathlib import Path

FOLDS = ("train1", "train2", "train3", "train4", "train5")


def member_settings(member, settings):
    """The architecture settings that are ``member``'s attributes: the same
    names, or for the fine-tuned member (``FullPaperSentenceClassifier.v3``)
    the names after ``finetuned_`` (``finetuned_frozen_layers`` ->
    ``frozen_layers``)."""
    out = {}
    for key, value in settings.items():
        name = key[len("finetuned_"):] if member.attrs.get("kind") == "finetuned" and \
            key.startswith("finetuned_") else key
        if name in member.attrs:
            out[name] = value
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cv-dir", type=Path, required=True)
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--set", nargs="*", default=[], help="architecture settings, key=value (JSON values)")
    parser.add_argument("--members", nargs="*", default=None, help="names of the members to refit (default all)")
    parser.add_argument("--folds", nargs="*", default=list(FOLDS))
    args = parser.parse_args(argv)

    import spacy
    import srsly

    from spacy_rhetoric.ml.fitted import fitted_members
    from spacy_rhetoric.readers.section_labels import SectionLabelCorpus

    settings = {k: srsly.json_loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    if args.output_dir.resolve() == args.cv_dir.resolve():
        print("--output-dir must differ from --cv-dir (the saved models are inputs)", file=sys.stderr)
        return 1
    for fold in args.folds:
        source = args.cv_dir / fold / "model" / "model-last"
        nlp = spacy.load(source, config={"components": {"rhetoric_function_classifier": {"model": settings}}})
        pipe = nlp.get_pipe("rhetoric_function_classifier")
        members = [m for m in fitted_members(pipe.model) if args.members is None or m.name in args.members]
        for member in members:
            member.attrs.update(member_settings(member, settings))
        corpus = SectionLabelCorpus(args.cv_dir / fold / "train.spacy")
        pipe._fit_closed_form(lambda: corpus(nlp), members)
        target = args.output_dir / fold / "model" / "model-last"
        target.parent.mkdir(parents=True, exist_ok=True)
        nlp.to_disk(target)
        print(f"{fold}: refit {[m.name for m in members]} -> {target}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
