"""Document-disjoint cross-validation, as the benchmarks run it: papers in
folds, every row trained on the other folds' papers and scored on the fold's.

Labels per fold (``evaluation.fullpaper``): :func:`cv_scores` runs one row
(a ``predict_fold`` function) over the folds of papers whose doc value
``fold`` names their fold, and scores it per fold and on the mean.

Vectors by class (``evaluation.metrics.retrieval_scores``: leave-one-out P@1
and MAP@R within a fold's scored test sentences): :func:`class_rows` (one row
per labelled sentence; its class: the fine label, else the coarse gold),
:func:`fold_splits` (per test fold: a seeded sample of test rows and the
other folds' rows for training, with classes held out for an open set),
:func:`run_corpus` (every encoder on every fold of one corpus), and
:func:`vector_rows` / :func:`zone_vector_rows` for vectors a pipeline gave
its kept sentences. ART's folds: :func:`art_fold_names`.
"""
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy

from ..errors import RhetoricError
from ..extensions import FINE_LABEL, LABEL, get_doc_value, get_span_value
from .fullpaper import mean_of, score
from .metrics import retrieval_scores
from .pipelines import kept_sentences

ART_FOLDS, ART_SEED = 5, 0
PARTS = ("all", "seen", "unseen")
# predict_fold(fold, train rows, test rows, test doc indices) -> one label per test row
PredictFold = Callable[[str, List[Dict], List[Dict], List[int]], List[Optional[str]]]
# An encoder: (split, ctx) -> [len(split["test"]), dim] vectors of the test rows; ctx holds "docs" (the
# corpus), "args" (the run's settings) and "cache" (models loaded once per run).
Encoder = Callable[[Dict, Dict], numpy.ndarray]


def art_fold_names(docs) -> List[str]:
    """Each ART paper's fold (``fold1``..``fold5``): ``readers.coresc.coresc_folds``, the folds the
    training corpora of ``run_fullpaper_cv.sh`` (``CORESC=1``) hold out too."""
    from ..readers.coresc import coresc_folds

    return coresc_folds(docs, n_folds=ART_FOLDS, seed=ART_SEED)


# ---------------------------------------------------------------- labels

def cv_scores(docs, rows: List[Dict], folds: Sequence[str], predict_fold: PredictFold) -> Dict[str, Any]:
    """``predict_fold`` on each fold (its test rows: those of the papers whose
    ``fold`` is the fold; its training rows: all others), scored per fold
    (``fullpaper.score``) and on their mean (``fullpaper.mean_of``)."""
    out = {}
    for fold in folds:
        test_docs = [i for i, d in enumerate(docs) if get_doc_value(d, "fold") == fold]
        held = set(test_docs)
        test = [r for r in rows if r["doc"] in held]
        train = [r for r in rows if r["doc"] not in held]
        out[fold] = score(test, predict_fold(fold, train, test, test_docs))
    return {"folds": out, "mean": mean_of(out)}


# ---------------------------------------------------------------- vectors a pipeline gave

def vector_rows(fold_vectors: Dict[str, List[numpy.ndarray]], fold_labels: Dict[str, List[str]]) -> Dict[str, Any]:
    """Leave-one-out P@1 / MAP@R by label within each fold, and their means."""
    folds = {}
    for fold, vectors in fold_vectors.items():
        result = retrieval_scores(numpy.vstack(vectors), fold_labels[fold])
        folds[fold] = {"p_at_1": float(result["p_at_1"]), "map_at_r": float(result["map_at_r"]),
                       "sentences": len(vectors)}
    mean = {k: float(numpy.mean([f[k] for f in folds.values()])) for k in ("p_at_1", "map_at_r")}
    return {"folds": folds, "mean": mean}


def fold_sentences(docs, fold: str) -> Tuple[List[str], List[Optional[str]]]:
    """A fold's kept sentences (``pipelines.kept_sentences``): texts and zones (fine labels)."""
    texts, zones = [], []
    for doc in docs:
        if get_doc_value(doc, "fold") == fold:
            for s in kept_sentences(doc):
                texts.append(s.text)
                zones.append(get_span_value(s, FINE_LABEL))
    return texts, zones


def zone_vector_rows(docs, fold_vectors: Dict[str, List[Optional[numpy.ndarray]]]) -> Dict[str, Any]:
    """``vector_rows`` of a pipeline's vectors (per fold, one per kept sentence) of the sentences with a zone."""
    kept_vectors, kept_zones = {}, {}
    for fold, vectors in fold_vectors.items():
        _, zones = fold_sentences(docs, fold)
        pairs = [(v, z) for v, z in zip(vectors, zones) if v is not None and z]
        kept_vectors[fold], kept_zones[fold] = [v for v, _ in pairs], [z for _, z in pairs]
    return vector_rows(kept_vectors, kept_zones)


def zoned_sentences(docs, folds: Sequence[str]) -> Tuple[Dict[str, List[str]], Dict[str, List[str]]]:
    """Per fold of ``folds`` that ``docs`` have: the texts and zones of the kept sentences with a zone."""
    texts, zones = {}, {}
    for fold in [f for f in folds if any(get_doc_value(d, "fold") == f for d in docs)]:
        fold_texts, fold_zones = fold_sentences(docs, fold)
        keep = [i for i, z in enumerate(fold_zones) if z]
        texts[fold], zones[fold] = [fold_texts[i] for i in keep], [str(fold_zones[i]) for i in keep]
    return texts, zones


# ---------------------------------------------------------------- vectors by class, per fold

def sentence_class(sent) -> Optional[str]:
    """The class of a sentence: its fine label, else its coarse gold label."""
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


def held_out_classes(classes: Sequence[str], k: int, seed: int) -> Set[str]:
    """``k`` of the distinct ``classes``, seeded (order-independent); at least
    two classes stay seen (a triplet needs two)."""
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


def split_test_docs(split: Dict, docs) -> Tuple[list, List[Dict]]:
    """The papers of a split's test rows, and the rows with ``doc`` indexing them."""
    order = sorted({r["doc"] for r in split["test"]})
    local = {d: i for i, d in enumerate(order)}
    return [docs[d] for d in order], [dict(r, doc=local[r["doc"]]) for r in split["test"]]



def split_scores(vectors, classes: Sequence[str], held_out: Set[str]) -> Dict[str, Optional[Dict]]:
    """``retrieval_scores`` on all test sentences and, with held-out classes,
    on those of the seen and of the unseen classes (None: fewer than 2)."""
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


def _line(corpus: str, name: str, mean: Dict, seconds: float) -> str:
    parts = "  ".join(f"{part} P@1 {m['p_at_1']:.3f} MAP@R {m['map_at_r']:.3f}" for part, m in mean.items())
    return f"{corpus:<10} {name:<30} {parts}  {seconds:.0f} s"


def run_corpus(corpus: str, docs, doc_folds: Sequence[str], test_folds: Sequence[str],
               encoders: List[Tuple[str, Encoder]], args, *, cache: Optional[Dict] = None) -> Dict:
    """Every encoder on every fold of one corpus: the corpus's summary and, by
    row, the per-fold scores, their mean and the seconds. ``args``: the run's
    settings (``open_set``, ``seed``, ``max_test``, ``max_test_docs``; the
    encoders read the rest); ``cache``: the models loaded once, shared
    between corpora. Prints a line per fold (stderr) and per row (stdout)."""
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
