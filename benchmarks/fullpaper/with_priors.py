"""A copy of trained pipelines whose function classifier runs with other
label priors (``[components.rhetoric_function_classifier.model.priors]``,
``ml/experts.py``): the priors are a prediction-time rule read from the
config at load, so models trained without them (the fold models of
``run_fullpaper_cv.sh``) are scored with them without training again.

Each ``SRC`` is a pipeline folder, or a CV folder (``trainK/model/model-last``
under it, copied with the fold's held-out corpora beside them, the layout
``bench_fields.py --az-cv-dir`` and ``bench_fullpaper.py --cv-dir`` read).

    python benchmarks/fullpaper/with_priors.py training/cv_az_all training/cv_az_all_priors \\
        --prior paper_body.objective=1.5 --prior paper_abstract.objective=1.5

``--prior SCOPE.LABEL=FACTOR`` (repeatable); none: the priors are removed.
The output folder must not exist.
"""
import argparse
import shutil
import sys
from pathlib import Path
from typing import Dict

CLASSIFIER = "rhetoric_function_classifier"


def parse_priors(values) -> Dict[str, Dict[str, float]]:
    priors: Dict[str, Dict[str, float]] = {}
    for value in values:
        try:
            key, factor = value.split("=", 1)
            scope, label = key.split(".", 1)
            priors.setdefault(scope, {})[label] = float(factor)
        except ValueError:
            raise SystemExit(f"--prior {value!r}: use SCOPE.LABEL=FACTOR, e.g. paper_body.objective=1.5")
    return priors


def set_priors(pipeline: Path, priors: Dict[str, Dict[str, float]]) -> None:
    """Write ``priors`` into the classifier's model block of ``pipeline/config.cfg`` (checked by loading)."""
    import spacy

    path = pipeline / "config.cfg"
    config = spacy.util.load_config(path)
    model = config["components"][CLASSIFIER]["model"]
    if "weights" not in model:
        raise SystemExit(f"{pipeline}: its classifier is no mixture (FullPaperSentenceClassifier), it has no priors")
    model["priors"] = priors
    config.to_disk(path)
    spacy.load(pipeline)  # the block's checks (scopes, factors) run at build


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--prior", action="append", default=[], metavar="SCOPE.LABEL=FACTOR")
    args = parser.parse_args(argv)
    priors = parse_priors(args.prior)
    if args.dst.exists():
        raise SystemExit(f"{args.dst} exists: give a new folder")
    if (args.src / "config.cfg").exists():
        shutil.copytree(args.src, args.dst)
        set_priors(args.dst, priors)
        return 0
    folds = sorted(p for p in args.src.glob("train*/model/model-last") if (p / "config.cfg").exists())
    if not folds:
        raise SystemExit(f"{args.src}: neither a pipeline (config.cfg) nor a CV folder (trainK/model/model-last)")
    for model in folds:
        fold = model.parent.parent
        out = args.dst / fold.name
        out.mkdir(parents=True)
        for corpus in fold.glob("heldout*.spacy"):
            shutil.copy2(corpus, out / corpus.name)
        shutil.copytree(model, out / "model" / "model-last")
        set_priors(out / "model" / "model-last", priors)
        print(f"{fold.name}: {priors or 'no priors'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
