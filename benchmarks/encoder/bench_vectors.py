"""Sentence vectors by expert class: do sentences of the same expert class lie
together, on document-disjoint folds?

Corpora (every sentence's class: its fine label ``sent._.rhetoric_fine_label``,
else its coarse gold ``label``; sentences with neither are left out):

* ``ART`` (``readers.coresc``, 225 chemistry papers): the CoreSC concept; the
  5 document-disjoint folds of ``benchmarks/fullpaper/bench_fields.py``
  (``art_fold_names``: ``kfold_doc_ids``, seed 0);
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
  sentence boundaries (as ``bench_fullpaper.pipeline_scores``);
* ``trunk vector head`` (``--new-encoder``): :func:`new_encoder_vectors`,
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
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy

CORPORA = ("ART", "MuLMS-AZ", "CSAbstruct")
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MAX_LENGTH = 256  # all-MiniLM-L6-v2's own max_seq_length
K_PER_CLASS = 4
LEARN_RATE, WARMUP, CLIP = 2e-5, 0.1, 1.0
FULLPAPER = Path(__file__).resolve().parent.parent / "fullpaper"
PARTS = ("all", "seen", "unseen")

RAW, FINETUNE, DEMO, NEW = "raw MiniLM", "ST BatchAllTriplet fine-tune", "demo encoder (before)", "trunk vector head"


# ---------------------------------------------------------------- corpora

def sentence_class(sent) -> Optional[str]:
    """The class of a sentence: its fine label, else its coarse gold label."""
    from spacy_rhetoric.extensions import FINE_LABEL, LABEL, get_span_value

    value = get_span_value(sent, FINE_LABEL)
    return value if value is not None else get_span_value(sent, LABEL)


def class_rows(docs, doc_folds: Sequence[str]) -> List[Dict]:
    """One row per labelled, non-blank sentence: ``doc`` (index into ``docs``),
    ``fold``, ``start`` / ``end`` (character offsets), ``text``, ``class``."""
    rows = []
    for d, doc in enumerate(docs):
        for sent in doc.sents:
            label = sentence_class(sent)
            if label is None or not sent.text.strip():
                continue
            rows.append({"doc": d, "fold": doc_folds[d], "start": sent.start_char, "end": sent.end_char,
                         "text": sent.text.strip(), "class": str(label)})
    return rows


def art_fold_names(docs) -> List[str]:
    """``bench_fields.art_fold_names`` (the ART folds of the full-paper benchmarks)."""
    if str(FULLPAPER) not in sys.path:
        sys.path.insert(0, str(FULLPAPER))
    from bench_fields import art_fold_names as fold_names

    return fold_names(docs)


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


def held_out_classes(classes: Sequence[str], k: int, seed: int) -> Set[str]:
    """``k`` of the distinct ``classes``, seeded (order-independent); at least
    two classes stay seen (a triplet needs two)."""
    from spacy_rhetoric.errors import RhetoricError

    distinct = sorted(set(classes))
    if k <= 0:
        return set()
    if k > len(distinct) - 2:
        raise RhetoricError(f"--open-set {k}: the corpus has {len(distinct)} classes; at least 2 must stay seen")
    rng = numpy.random.default_rng(seed)
    return {distinct[i] for i in rng.choice(len(distinct), size=k, replace=False)}


def fold_splits(rows: List[Dict], test_folds: Sequence[str], *, held_out: Set[str], max_test: int,
                seed: int, max_test_docs: int = 0) -> List[Dict]:
    """Per test fold: ``test`` (a seeded sample of at most ``max_test`` of the
    fold's rows, in document order; with ``max_test_docs``, of the rows of a
    seeded sample of at most that many of its papers, first -- an encoder
    that reads whole papers then reads only those) and ``train`` (the other
    folds' rows whose class is not held out)."""
    splits = []
    every_fold = sorted({r["fold"] for r in rows})
    for fold in test_folds:
        n = every_fold.index(fold)  # the fold's own seed, whichever folds a run scores (--folds)
        test = [r for r in rows if r["fold"] == fold]
        papers = sorted({r["doc"] for r in test})
        if max_test_docs and len(papers) > max_test_docs:
            chosen = set(numpy.random.default_rng([seed, n, 1]).choice(papers, size=max_test_docs, replace=False))
            test = [r for r in test if r["doc"] in chosen]
        if max_test and len(test) > max_test:
            keep = numpy.random.default_rng([seed, n]).choice(len(test), size=max_test, replace=False)
            test = [test[i] for i in sorted(keep)]
        train = [r for r in rows if r["fold"] != fold and r["class"] not in held_out]
        splits.append({"fold": fold, "test": test, "train": train, "held_out": set(held_out)})
    return splits


# ---------------------------------------------------------------- scores

def split_scores(vectors, classes: Sequence[str], held_out: Set[str]) -> Dict[str, Optional[Dict]]:
    """``retrieval_scores`` on all test sentences and, with held-out classes,
    on those of the seen and of the unseen classes (None: fewer than 2)."""
    from spacy_rhetoric.evaluation.metrics import retrieval_scores

    vectors = numpy.asarray(vectors, dtype="float32")
    keep = {"all": lambda c: True}
    if held_out:
        keep.update(seen=lambda c: c not in held_out, unseen=lambda c: c in held_out)
    out: Dict[str, Optional[Dict]] = {}
    for part, wanted in keep.items():
        idx = [i for i, c in enumerate(classes) if wanted(c)]
        if len(idx) < 2:
            out[part] = None
            continue
        scores = retrieval_scores(vectors[idx], [classes[i] for i in idx])
        scores.update(n_sentences=len(idx), n_classes=len({classes[i] for i in idx}))
        out[part] = scores
    return out


def mean_scores(folds: Dict[str, Dict]) -> Dict[str, Dict[str, float]]:
    """P@1 and MAP@R of each part averaged over the folds that have it."""
    out = {}
    for part in PARTS:
        have = [f[part] for f in folds.values() if f.get(part)]
        if have:
            out[part] = {k: float(numpy.mean([s[k] for s in have])) for k in ("p_at_1", "map_at_r")}
            out[part]["n_folds"] = len(have)
    return out


# ---------------------------------------------------------------- encoders
# An encoder: (split, ctx) -> [len(split["test"]), dim] vectors of the test rows; ctx holds "docs" (the
# corpus), "args" and "cache" (models loaded once per run).
Encoder = Callable[[Dict, Dict], numpy.ndarray]


def _minilm(device=None):
    from spacy_rhetoric.ml.st_models import load_sentence_transformer

    return load_sentence_transformer(MODEL, max_length=MAX_LENGTH, device=device)


def _encode(model, texts: Sequence[str], batch_size: int) -> numpy.ndarray:
    from spacy_rhetoric.evaluation.neighbours import l2_normalize
    from spacy_rhetoric.ml.st_models import encode

    return l2_normalize(encode(model, texts, batch_size=batch_size))


def raw_minilm(split: Dict, ctx: Dict) -> numpy.ndarray:
    if "raw" not in ctx["cache"]:
        ctx["cache"]["raw"] = _minilm()
    return _encode(ctx["cache"]["raw"], [r["text"] for r in split["test"]], 64)


def finetune_triplets(model, texts: Sequence[str], classes: Sequence[str], *, steps: int, batch_size: int,
                      seed: int) -> List[float]:
    """Fine-tune ``model`` in place with ``BatchAllTripletLoss`` (module
    docstring); the loss of each step."""
    import torch
    from sentence_transformers.sentence_transformer.losses import BatchAllTripletLoss
    from sentence_transformers.util import batch_to_device
    from transformers import get_linear_schedule_with_warmup

    from spacy_rhetoric.batching.batchers import PKBatcher

    torch.manual_seed(seed)
    ids = {c: i for i, c in enumerate(sorted(set(classes)))}
    p = min(batch_size // K_PER_CLASS, len(ids))
    batcher = PKBatcher(p, K_PER_CLASS, seed=seed, buffer=0, batches_per_chunk=steps,
                        get_label=lambda i: classes[i])
    loss_module = BatchAllTripletLoss(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARN_RATE)
    schedule = get_linear_schedule_with_warmup(optimizer, int(WARMUP * steps), steps)
    model.train()
    losses = []
    for batch in batcher(range(len(texts))):
        features = batch_to_device(model.preprocess([texts[i] for i in batch]), model.device)
        labels = torch.tensor([ids[classes[i]] for i in batch], device=model.device)
        loss = loss_module([features], labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def st_finetune(split: Dict, ctx: Dict) -> numpy.ndarray:
    args = ctx["args"]
    model = _minilm()
    losses = finetune_triplets(model, [r["text"] for r in split["train"]], [r["class"] for r in split["train"]],
                               steps=args.steps, batch_size=args.batch_size, seed=args.seed)
    split.setdefault("notes", {})[FINETUNE] = {"first_loss": losses[0], "last_loss": losses[-1],
                                               "steps": len(losses)}
    return _encode(model, [r["text"] for r in split["test"]], 64)


def _test_docs(split: Dict, docs) -> Tuple[list, List[Dict]]:
    """The papers of the test rows, and the rows with ``doc`` indexing them."""
    order = sorted({r["doc"] for r in split["test"]})
    local = {d: i for i, d in enumerate(order)}
    return [docs[d] for d in order], [dict(r, doc=local[r["doc"]]) for r in split["test"]]


def pipeline_vectors(nlp, docs, rows: List[Dict], *, batch_size: int = 4,
                     disable_factories: Sequence[str] = ("rhetoric_function_classifier",)) -> numpy.ndarray:
    """``sent._.rhetoric_vector`` of each row (``doc`` indexing ``docs``),
    ``nlp`` run over label-free copies of ``docs`` with their sentence
    boundaries kept (sentencizer, senter and parser not run) and without the
    components of ``disable_factories`` (by default the function classifier,
    which the sentence encoder does not need; ``()`` for a classifier whose
    vector head writes the vectors)."""
    from spacy_rhetoric.errors import RhetoricError
    from spacy_rhetoric.extensions import FINE_LABEL, GOLD_LABELS, LABEL, SCORES, VECTOR, clear_field, get_span_value

    copies = []
    for doc in docs:
        copy = doc.copy()
        for field in (LABEL, FINE_LABEL, GOLD_LABELS, SCORES, VECTOR):
            clear_field(copy, field)
        copies.append(copy)
    skip = [n for n in nlp.pipe_names if n in ("sentencizer", "senter", "parser")
            or nlp.get_pipe_meta(n).factory in disable_factories]
    found = {}
    with nlp.select_pipes(disable=skip):
        for d, doc in enumerate(nlp.pipe(copies, batch_size=batch_size)):
            for sent in doc.sents:
                found[(d, sent.start_char, sent.end_char)] = get_span_value(sent, VECTOR)
    vectors = [found.get((r["doc"], r["start"], r["end"])) for r in rows]
    missing = sum(v is None for v in vectors)
    if missing:
        raise RhetoricError(f"{missing} of {len(rows)} sentences got no rhetoric_vector (sentence boundaries "
                            "moved, or the pipeline has no sentence encoder)")
    return numpy.vstack(vectors).astype("float32")


def demo_encoder(split: Dict, ctx: Dict) -> numpy.ndarray:
    if "demo" not in ctx["cache"]:
        import spacy

        ctx["cache"]["demo"] = spacy.load(ctx["args"].demo_pipeline, exclude=[
            "parser", "tagger", "attribute_ruler", "lemmatizer", "ner", "rhetoric_phrase_labeler"])
    docs, rows = _test_docs(split, ctx["docs"])
    return pipeline_vectors(ctx["cache"]["demo"], docs, rows)


# ---- HOOK: the new encoder ---------------------------------------------------------------------------------
def new_encoder_vectors(train_docs, test_docs, args, *, test_rows: List[Dict], held_out: Set[str]) -> numpy.ndarray:
    """The trunk's vector head (``spacy_rhetoric.VectorHead.v1`` on the
    classifier's ``FinetunedMember.v1``, as ``configs/classifier.cfg`` has
    them): fitted on ``train_docs`` (the other folds' papers; sentences of
    the ``held_out`` classes have no labels there) with the coarse gold
    labels for its classifier head and the fine ones for its vector head,
    for the same number of steps of the same batch size as the
    sentence-transformers fine-tune; then one pass over ``test_docs`` (whole
    papers: each sentence is read with its heading and neighbours) gives the
    vectors of ``test_rows`` (``doc`` indexes ``test_docs``; ``start`` /
    ``end`` character offsets)."""
    from spacy.util import registry
    from thinc.api import NumpyOps

    from spacy_rhetoric.extensions import LABEL, get_span_value
    from spacy_rhetoric.ml.finetuned import VectorHead, finetuned_expert
    from spacy_rhetoric.ml.members import fit_members
    from spacy_rhetoric.ml.pooling import doc_sentences, make_indices
    from spacy_rhetoric.ml.segments import paper_rows

    def as_X(docs):
        return docs, make_indices(NumpyOps(), [doc_sentences(d)[1] for d in docs])

    gold = [get_span_value(s, LABEL) for d in train_docs for s in doc_sentences(d)[0]]
    labelled = sum(g is not None for g in gold)
    papers = bool(paper_rows(as_X(train_docs[:1])).any())  # full papers (MuLMS-AZ, ART), else abstracts
    head = VectorHead(width=args.trunk_width, loss=registry.misc.get(f"spacy_rhetoric.{args.trunk_loss}.v1")(),
                      weight=args.trunk_weight, pooling=args.trunk_pooling)
    member = finetuned_expert(MODEL, epochs=args.steps * args.batch_size / max(1, labelled),
                              batch_size=args.batch_size, seed=args.seed, vectors=head,
                              docs="papers" if papers else "others")
    fit_members([member], as_X(train_docs), gold, sorted({g for g in gold if g is not None}))
    out = numpy.asarray(member.predict(as_X(test_docs)))
    row_of, row = {}, 0
    for d, doc in enumerate(test_docs):
        for sent in doc_sentences(doc)[0]:
            row_of[(d, sent.start_char, sent.end_char)] = row
            row += 1
    return out[[row_of[(r["doc"], r["start"], r["end"])] for r in test_rows], -args.trunk_width:]


def new_encoder(split: Dict, ctx: Dict) -> numpy.ndarray:
    from spacy_rhetoric.extensions import FINE_LABEL, GOLD_LABELS, LABEL, set_span_values

    train_docs = []
    for d in sorted({r["doc"] for r in split["train"]}):
        doc = ctx["docs"][d].copy()
        hidden = [s for s in doc.sents if sentence_class(s) in split["held_out"]]
        for field in (LABEL, FINE_LABEL, GOLD_LABELS):
            set_span_values(doc, field, hidden, [None] * len(hidden))
        train_docs.append(doc)
    docs, rows = _test_docs(split, ctx["docs"])
    return new_encoder_vectors(train_docs, docs, ctx["args"], test_rows=rows, held_out=split["held_out"])
# ---- end of the hook ----------------------------------------------------------------------------------------


def encoder_rows(args) -> List[Tuple[str, Encoder]]:
    rows = [(RAW, raw_minilm), (FINETUNE, st_finetune)]
    if args.demo_pipeline:
        rows.append((DEMO, demo_encoder))
    if args.new_encoder:
        rows.append((NEW, new_encoder))
    return rows


# ---------------------------------------------------------------- runs

def _line(corpus: str, name: str, mean: Dict, seconds: float) -> str:
    parts = "  ".join(f"{part} P@1 {m['p_at_1']:.3f} MAP@R {m['map_at_r']:.3f}" for part, m in mean.items())
    return f"{corpus:<10} {name:<30} {parts}  {seconds:.0f} s"


def run_corpus(corpus: str, docs, doc_folds: Sequence[str], test_folds: Sequence[str],
               encoders: List[Tuple[str, Encoder]], args, *, cache: Optional[Dict] = None) -> Dict:
    """Every encoder on every fold of one corpus: the corpus's summary and, by
    row, the per-fold scores, their mean and the seconds (``cache``: the
    models loaded once, shared between corpora)."""
    rows = class_rows(docs, doc_folds)
    held_out = held_out_classes([r["class"] for r in rows], args.open_set, args.seed)
    splits = fold_splits(rows, test_folds, held_out=held_out, max_test=args.max_test, seed=args.seed,
                         max_test_docs=getattr(args, "max_test_docs", 0))
    ctx = {"docs": docs, "args": args, "cache": {} if cache is None else cache}
    results: Dict[str, Dict] = {name: {"folds": {}, "seconds": 0.0} for name, _ in encoders}
    for split in splits:
        classes = [r["class"] for r in split["test"]]
        for name, encode in encoders:
            t0 = time.time()
            vectors = encode(split, ctx)
            seconds = time.time() - t0
            scores = split_scores(vectors, classes, held_out)
            scores.update(n_test=len(classes), n_train=len(split["train"]), seconds=round(seconds, 1),
                          **split.get("notes", {}).get(name, {}))
            results[name]["folds"][split["fold"]] = scores
            results[name]["seconds"] += seconds
            print(f"  {corpus} {split['fold']} {name}: " + "  ".join(
                f"{p} P@1 {s['p_at_1']:.3f} MAP@R {s['map_at_r']:.3f}" for p, s in scores.items()
                if p in PARTS and s) + f" ({seconds:.0f} s)", file=sys.stderr, flush=True)
    for name, result in results.items():
        result["mean"] = mean_scores(result["folds"])
        result["seconds"] = round(result["seconds"], 1)
        print(_line(corpus, name, result["mean"], result["seconds"]), flush=True)
    counts: Dict[str, int] = {}
    for r in rows:
        counts[r["class"]] = counts.get(r["class"], 0) + 1
    summary = {"papers": len(docs), "sentences": len(rows), "classes": dict(sorted(counts.items())),
               "held_out": sorted(held_out), "folds": [s["fold"] for s in splits],
               "test_docs": {s["fold"]: len({r["doc"] for r in s["test"]}) for s in splits}}
    return {"corpus": summary, "rows": results}


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
    parser.add_argument("--new-encoder", action="store_true", help="the trunk's vector head row (new_encoder_vectors)")
    parser.add_argument("--trunk-loss", default="MultiSimilarityLoss", help="its metric loss (spacy_rhetoric.<name>.v1)")
    parser.add_argument("--trunk-weight", type=float, default=1.0, help="its loss weight beside the cross-entropy")
    parser.add_argument("--trunk-width", type=int, default=256, help="its vector width")
    parser.add_argument("--trunk-pooling", choices=POOLINGS, default="sentence",
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
    report = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv),
              "torch_threads": torch.get_num_threads(),
              "settings": {k: getattr(args, k) for k in ("max_test", "steps", "batch_size", "seed", "open_set")}
              | {"k_per_class": K_PER_CLASS, "learn_rate": LEARN_RATE, "warmup": WARMUP, "model": MODEL,
                 "demo_pipeline": str(args.demo_pipeline) if args.demo_pipeline else None},
              "corpora": {}, "rows": {}}
    for corpus in args.corpora:
        t0 = time.time()
        docs, doc_folds, test_folds = load_corpus(corpus, args.data)
        if args.folds is not None:
            test_folds = [test_folds[i - 1] for i in args.folds if i <= len(test_folds)]
        print(f"read {corpus}: {len(docs)} docs, folds {test_folds} ({time.time() - t0:.0f} s)", flush=True)
        if not test_folds:
            continue
        out = run_corpus(corpus, docs, doc_folds, test_folds, encoders, args, cache=cache)
        report["corpora"][corpus], report["rows"][corpus] = out["corpus"], out["rows"]
    report["seconds"] = round(time.time() - started)
    print(f"{report['seconds']} s", flush=True)
    if args.out:
        from spacy_rhetoric.io import atomic_write_json

        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(args.out, report, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
