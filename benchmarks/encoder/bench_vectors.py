"""Sentence vectors by expert class: do sentences of the same expert class lie
together, on document-disjoint folds?

Corpora (every sentence's class: its fine label ``sent._.rhetoric_fine_label``,
else its coarse gold ``label``; sentences with neither are left out):

* ``ART`` (``readers.coresc``, 225 chemistry papers): the CoreSC concept; the
  5 document-disjoint folds of ``benchmarks/fullpaper/bench_fields.py``
  (``evaluation.cv.art_fold_names``: ``readers.coresc.coresc_folds``, seed 0);
* ``MuLMS-AZ`` (``readers.mulms``, 36 materials-science papers): the expert
  zone; the dataset's own folds ``train1``..``train5``;
* ``CSAbstruct``: the label; one fold, trained on ``train.jsonl`` and scored on
  ``dev.jsonl``.

Per fold the test sentences are the fold's (a seeded sample of at most
``--max-test``), the training sentences those of the other folds (the other
papers). ``--open-set K`` holds K classes of each corpus (seeded) out of
training; the scores are then also given on the test sentences of the seen
and of the unseen classes (each retrieved among those sentences only, as in
``open_set.py``).

Rows, all in one run, each scored by ``evaluation.metrics.retrieval_scores``
(leave-one-out P@1 and MAP@R by class, cosine, within a fold's scored test
sentences) and averaged over the folds:

* ``raw MiniLM``: all-MiniLM-L6-v2 (the local copy,
  ``util.resolve_hf_model``), loaded by ``ml.st_models`` (mean pooling, 256
  tokens) and L2-normalised;
* ``ST BatchAllTriplet fine-tune``: the same model fine-tuned per fold on the
  training sentences with sentence-transformers' ``BatchAllTripletLoss``
  (their module, default margin and distance) for exactly ``--steps`` steps of
  ``--batch-size`` sentences drawn P x K (``K = 4`` sentences of each of
  ``P = batch-size / 4`` classes, ``batching.PKBatcher``, seeded), AdamW
  lr 2e-5, linear warm-up over 10 % of the steps then linear decay, gradients
  clipped at norm 1. Their loss in a plain torch loop: their Trainer / ``fit``
  need ``datasets`` and ``accelerate``, which the environment does not have;
* ``demo encoder (before)`` (``--demo-pipeline PATH``): a trained pipeline as
  it is (not retrained per fold): ``sent._.rhetoric_vector`` of the scored
  sentences, the pipeline run over their whole papers with the readers'
  sentence boundaries (``evaluation.pipelines.pipeline_vectors``);
* ``trunk vector head`` (``--new-encoder``): ``evaluation.encoders.trunk_vectors``,
  the pipeline's own encoder -- the classifier's fine-tuned MiniLM member with
  its vector head (``VectorHead.v1``; ``--trunk-loss``, ``--trunk-weight``,
  ``--trunk-width``, ``--trunk-pooling``, by default the sentence's own word
  pieces as ``configs/classifier.cfg`` has it) -- fitted per fold for the same steps and batch size,
  reading each sentence with its heading and neighbours.

``--max-test-docs N`` first samples at most N papers of each test fold
(seeded), so an encoder that reads whole papers reads only those.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/encoder/bench_vectors.py --data ../shared/data \\
        [--corpora ART,MuLMS-AZ,CSAbstruct] [--folds 1,2] [--open-set 2] \\
        [--demo-pipeline .demo/pipeline] --out /tmp/vectors.json
"""
import argparse
import os
import sys
import time
from pathlib import Path
from typing import List, Tuple

from spacy_rhetoric.evaluation.cv import Encoder, art_fold_names, run_corpus
from spacy_rhetoric.evaluation.encoders import (
    DEMO,
    FINETUNE,
    RAW,
    TRUNK,
    TrunkSettings,
    pipeline_encoder,
    raw_minilm,
    st_finetune,
    trunk_encoder,
)
from spacy_rhetoric.evaluation.report import new_report, write_report
from spacy_rhetoric.evaluation.st_baseline import K_PER_CLASS, LEARN_RATE, MODEL, WARMUP

CORPORA = ("ART", "MuLMS-AZ", "CSAbstruct")
NEW = TRUNK


def load_corpus(name: str, data: Path) -> Tuple[list, List[str], List[str]]:
    """(docs, each doc's fold, the folds scored in turn) of one corpus."""
    import spacy

    from spacy_rhetoric.extensions import get_doc_value
    from spacy_rhetoric.readers.section_labels import csabstruct_docs, mulms_docs

    nlp = spacy.blank("en")
    if name == "CSAbstruct":
        train = csabstruct_docs(data / "csabstruct" / "train.jsonl", nlp)
        dev = csabstruct_docs(data / "csabstruct" / "dev.jsonl", nlp)
        return train + dev, ["train"] * len(train) + ["dev"] * len(dev), ["dev"]
    tagger = spacy.blank("en").add_pipe("rhetoric_section_tagger")
    if name == "ART":
        from spacy_rhetoric.readers.coresc import read_coresc

        docs = [tagger(d) for d in read_coresc(data / "coresc-art", nlp)]
        folds = art_fold_names(docs)
    else:
        docs = mulms_docs(data / "mulms-az" / "train.jsonl", nlp, tagger)
        folds = [str(get_doc_value(d, "fold")) for d in docs]
    return docs, folds, sorted(set(folds))


def encoder_rows(args) -> List[Tuple[str, Encoder]]:
    rows = [(RAW, raw_minilm), (FINETUNE, st_finetune)]
    if args.demo_pipeline:
        rows.append((DEMO, pipeline_encoder))
    if args.new_encoder:
        rows.append((NEW, trunk_encoder))
    return rows


def _int_list(text: str) -> List[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv=None):
    from spacy_rhetoric.ml.finetuned import POOLINGS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated: " + ", ".join(CORPORA))
    parser.add_argument("--folds", type=_int_list, default=None,
                        help="1-based fold numbers to score (default all; CSAbstruct has one)")
    parser.add_argument("--max-test", type=int, default=3000, help="test sentences scored per fold (0: all)")
    parser.add_argument("--max-test-docs", type=int, default=0,
                        help="per fold, first a seeded sample of at most this many test papers (0: all)")
    parser.add_argument("--steps", type=int, default=300, help="fine-tuning steps")
    parser.add_argument("--batch-size", type=int, default=16, help=f"sentences per step ({K_PER_CLASS} per class)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--open-set", type=int, default=0, help="classes of each corpus held out of training")
    parser.add_argument("--demo-pipeline", type=Path, default=None, help="a trained pipeline, scored as it is")
    parser.add_argument("--new-encoder", action="store_true",
                        help="the trunk's vector head row (evaluation.encoders.trunk_vectors)")
    trunk = TrunkSettings()
    parser.add_argument("--trunk-loss", default=trunk.loss, help="its metric loss (spacy_rhetoric.<name>.v1)")
    parser.add_argument("--trunk-weight", type=float, default=trunk.weight,
                        help="its loss weight beside the cross-entropy")
    parser.add_argument("--trunk-width", type=int, default=trunk.width, help="its vector width")
    parser.add_argument("--trunk-pooling", choices=POOLINGS, default=trunk.pooling,
                        help="what its vector head averages (VectorHead.pooling; configs/classifier.cfg: sentence)")
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    unknown = sorted(set(args.corpora) - set(CORPORA))
    if unknown or not args.corpora:
        parser.error(f"--corpora: unknown {unknown}; use {', '.join(CORPORA)}")
    if args.batch_size < 2 * K_PER_CLASS or args.batch_size % K_PER_CLASS:
        parser.error(f"--batch-size must be a multiple of {K_PER_CLASS}, at least {2 * K_PER_CLASS}")
    if args.steps < 1 or args.max_test < 0 or args.open_set < 0:
        parser.error("--steps must be >= 1, --max-test and --open-set >= 0")
    if args.folds is not None and (not args.folds or min(args.folds) < 1):
        parser.error("--folds: 1-based fold numbers, e.g. 1,2")
    args.trunk = TrunkSettings(loss=args.trunk_loss, weight=args.trunk_weight, width=args.trunk_width,
                               pooling=args.trunk_pooling)
    return args


def main(argv=None) -> int:
    import torch

    args = parse_args(argv)
    if os.environ.get("OMP_NUM_THREADS", "").isdigit():
        torch.set_num_threads(max(1, int(os.environ["OMP_NUM_THREADS"])))
    print(f"torch threads: {torch.get_num_threads()}", flush=True)
    if args.gpu_id >= 0:
        from spacy_rhetoric.util import use_device

        use_device(args.gpu_id)
    started = time.time()
    encoders, cache = encoder_rows(args), {}
    settings = {k: getattr(args, k) for k in ("max_test", "steps", "batch_size", "seed", "open_set")} | {
        "k_per_class": K_PER_CLASS, "learn_rate": LEARN_RATE, "warmup": WARMUP, "model": MODEL,
        "demo_pipeline": str(args.demo_pipeline) if args.demo_pipeline else None}
    corpora, rows = {}, {}
    for corpus in args.corpora:
        t0 = time.time()
        docs, doc_folds, test_folds = load_corpus(corpus, args.data)
        if args.folds is not None:
            test_folds = [test_folds[i - 1] for i in args.folds if i <= len(test_folds)]
        print(f"read {corpus}: {len(docs)} docs, folds {test_folds} ({time.time() - t0:.0f} s)", flush=True)
        if not test_folds:
            continue
        out = run_corpus(corpus, docs, doc_folds, test_folds, encoders, args, cache=cache)
        corpora[corpus], rows[corpus] = out["corpus"], out["rows"]
    report = new_report(started, torch_threads=torch.get_num_threads(), settings=settings, corpora=corpora, rows=rows)
    print(f"{report['seconds']} s", flush=True)
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
