"""Refit the closed-form members of saved full-paper classifiers
(``FullPaperSentenceClassifier.v4``: the blocks under ``[model.members]``,
``ml/tfidf_member.py``, ``ml/finetuned.py``) with other settings, keeping the
trained network as it is.

The fitted members take no part in training (the network's loss, its random
numbers and its steps are the same with or without them) and are fitted after
the network is initialized, so a pipeline trained with the new settings from
the start has the same network and the same fitted members as its refit copy:
the refit skips the network's training when only a member's settings change
(e.g. the per-fold models of ``benchmarks/fullpaper/run_fullpaper_cv.sh``).

    python benchmarks/fullpaper/refit_fitted.py --cv-dir training/fullpaper_cv4 --output-dir training/fullpaper_cv5 \\
        --set tfidf.normalize_digits=true abstracts.normalize_digits=true --members tfidf abstracts

For each fold: loads ``<cv-dir>/<fold>/model/model-last`` with the member
settings of ``--set`` (``BLOCK.ARGUMENT=JSON``; the saved config is updated),
refits the members named by their block (default: all) on ``<cv-dir>/<fold>/train.spacy``
(``evaluation.pipelines.refit_members``: the pipe's ``fit_members``, as the explicit member-fitting
step of ``pipeline/fitting.py`` fits them) and writes
``<output-dir>/<fold>/model/model-last``.
"""
import argparse
import sys
from pathlib import Path

FOLDS = ("train1", "train2", "train3", "train4", "train5")


def parse_settings(items):
    """``["tfidf.C=2.0", ...]`` -> ``{"tfidf": {"C": 2.0}}`` (JSON values)."""
    import srsly

    out = {}
    for item in items:
        key, _, value = item.partition("=")
        block, _, name = key.partition(".")
        if not name:
            raise SystemExit(f"--set {item!r}: use BLOCK.ARGUMENT=VALUE, e.g. tfidf.C=2.0")
        out.setdefault(block, {})[name] = srsly.json_loads(value)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cv-dir", type=Path, required=True)
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--set", nargs="*", default=[], help="member settings, BLOCK.ARGUMENT=VALUE (JSON values)")
    parser.add_argument("--members", nargs="*", default=None, help="block names of the members to refit (default all)")
    parser.add_argument("--folds", nargs="*", default=list(FOLDS))
    args = parser.parse_args(argv)

    import spacy

    from spacy_rhetoric.evaluation.pipelines import refit_members
    from spacy_rhetoric.readers.section_labels import SectionLabelCorpus

    settings = parse_settings(args.set)
    if args.output_dir.resolve() == args.cv_dir.resolve():
        print("--output-dir must differ from --cv-dir (the saved models are inputs)", file=sys.stderr)
        return 1
    for fold in args.folds:
        source = args.cv_dir / fold / "model" / "model-last"
        nlp = spacy.load(source, config={"components": {"rhetoric_function_classifier": {
            "model": {"members": settings}}}})
        pipe = nlp.get_pipe("rhetoric_function_classifier")
        mixture = next(n for n in pipe.model.walk() if n.name == "experts")
        blocks = dict(zip(mixture.attrs["names"], mixture.layers))
        unknown = (set(settings) | set(args.members or ())) - set(blocks)
        if unknown:
            print(f"no member blocks {sorted(unknown)} (blocks: {sorted(blocks)})", file=sys.stderr)
            return 1
        names = [n for n in mixture.attrs["names"][1:] if args.members is None or n in args.members]
        members = [blocks[n] for n in names]
        for name in names:  # the saved attrs take the new settings (the built member read the config)
            blocks[name].attrs.update({k: v for k, v in settings.get(name, {}).items() if k in blocks[name].attrs})
        corpus = SectionLabelCorpus(args.cv_dir / fold / "train.spacy")
        refit_members(pipe, lambda: corpus(nlp), members)
        target = args.output_dir / fold / "model" / "model-last"
        target.parent.mkdir(parents=True, exist_ok=True)
        nlp.to_disk(target)
        print(f"{fold}: refit {names} -> {target}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
