"""make demo: build a small spacy_rhetoric pipeline and annotate a sample paper.

    python scripts/demo.py [paper.txt] [--classifier-steps N] [--encoder-steps N]
                           [--output .demo] [--retrain]

1. loads the English parser (en_core_web_sm);
2. trains, with spaCy's own training loop and configs/classifier_cpu.cfg /
   configs/encoder_cpu.cfg, a CPU rhetoric_function_classifier (tok2vec +
   context architecture) and a rhetoric_sentence_encoder (tok2vec) on the
   CSAbstruct train split for a fixed number of steps, scored once on the dev
   split; models already in .demo/ are reused;
3. assembles parser + rhetoric_phrase_labeler (Iwatsuki & Aizawa 2021
   phrase database) + the two trained components into one pipeline and saves
   it to .demo/pipeline;
4. prints each sentence of the paper with its function label and score, its
   phrase label and n-gram, and for a few sentences the most similar other
   sentence (sent.similarity on the encoder's vectors).

Data comes from $SPACY_RHETORIC_DATA (default: ../shared/data next to the
repository): csabstruct/{train,dev}.jsonl and iwatsuki2021-fe-database-cl/.
"""
import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import spacy_rhetoric  # noqa: E402
from spacy_rhetoric import demo  # noqa: E402
from spacy_rhetoric.util import load_parser  # noqa: E402

SAMPLE = demo.REPO / "assets" / "sample_paper.txt"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paper", nargs="?", type=Path, default=SAMPLE)
    parser.add_argument("--output", type=Path, default=demo.REPO / ".demo")
    parser.add_argument("--classifier-steps", type=int, default=400)
    parser.add_argument("--encoder-steps", type=int, default=400)
    parser.add_argument("--retrain", action="store_true", help="train again even if .demo/ has models")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    try:
        data = demo.find_data()
        if not args.paper.exists():
            raise demo.DemoError(f"No such paper: {args.paper}")
    except demo.DemoError as err:
        print(f"ERROR: {err}", file=sys.stderr)
        return 1
    print(f"spacy_rhetoric {spacy_rhetoric.__version__}; data from {demo.data_dir()}")

    parser_nlp = load_parser("en_core_web_sm", exclude=["ner"])
    classifier, encoder = demo.train_demo_models(
        data, args.output, classifier_steps=args.classifier_steps,
        encoder_steps=args.encoder_steps, retrain=args.retrain)

    nlp = demo.assemble(parser_nlp, data.phrases, [classifier, encoder])
    nlp.to_disk(args.output / "pipeline")
    print(f"\npipeline {nlp.pipe_names} -> {args.output / 'pipeline'}")

    counts = demo.annotate(nlp, args.paper.read_text(encoding="utf8"))

    clf, enc = demo.dev_scores(classifier), demo.dev_scores(encoder)
    print(f"\n{counts['sentences']} sentences of {args.paper}, "
          f"{counts['phrase_labeled']} with a phrase label")
    print(f"Quick models, scored by spaCy on CSAbstruct dev after training "
          f"({args.classifier_steps} / {args.encoder_steps} steps):")
    print(f"  classifier F1 micro {clf.get('rhetoric_f_micro', float('nan')):.3f}, "
          f"macro {clf.get('rhetoric_f_macro', float('nan')):.3f}")
    print(f"  encoder P@1 {enc.get('encoder_p_at_1', float('nan')):.3f}, "
          f"MAP@R {enc.get('encoder_map_at_r', float('nan')):.3f}")
    print("  (longer training with the configs in configs/ does better; see benchmarks/README.md)")
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
