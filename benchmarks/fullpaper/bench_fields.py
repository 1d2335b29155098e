"""Every field: does a classifier tell a paper's own work from background in
chemistry (ART / CoreSC) and computational linguistics (AZ-CL) as in
materials science (MuLMS-AZ)?

Corpora (full papers with expert sentence labels, sections from the default
``rhetoric_section_tagger``):

* ART / CoreSC (``readers.coresc``; 225 chemistry and biochemistry papers,
  CC BY-NC): 5 document-disjoint folds of the paper ids,
  ``readers.splits.kfold_doc_ids(ids, n_folds=5, seed=0)`` (``ART_SEED``);
* MuLMS-AZ (``readers.mulms``; 36 materials-science papers): its own folds
  ``train1``..``train5``;
* AZ-CL (``readers.az``; 50 computational-linguistics papers, Teufel's
  Argumentative Zoning, CC BY-SA 3.0): 5 document-disjoint folds of the paper
  ids, ``readers.az.az_folds(docs, n_folds=5, seed=0)`` (``AZ_FOLDS``,
  ``AZ_SEED``; the folds ``run_fullpaper_cv.sh`` with ``AZ=1`` holds out).
  OWN accepts method or result, AIM objective, BKG/OTH/CTR/BAS background;
  TXT is not scored. Its rows also give, pooled over the folds, the shares
  AIM -> objective, others' work -> background, OWN -> background (``zone_shares``).
``--corpora``: only these corpora (and those their cross-field rows train on).

Rows, all in one run, each scored per fold of the corpus it is scored on
and averaged (``spacy_rhetoric.evaluation.fullpaper``: lenient, single
accuracy, macro-F1 and per-class F1, echo, and each corpus's share of its
method + result sentences predicted ``background``):

* ``heading lookup``: ``bench_fullpaper``'s fixed lookup on the raw
  heading (its default: the training data's most frequent label);
* ``TF-IDF + heading + position + neighbours LogReg``: ``bench_fullpaper``'s
  scikit-learn row;

each trained

* **in field**: on the other folds of the same corpus (cross-validation);
* **cross field**: without the corpus scored: CSAbstruct train (computer
  science abstracts, heading "Abstract") + the other corpus (``CROSS_FIELD``:
  MuLMS-AZ for ART and AZ-CL -- the data a pipeline trained on CSAbstruct +
  MuLMS-AZ has seen --, ART for MuLMS-AZ); one model, scored on every fold;
* **all fields** (``--all-fields``): the other folds + the other corpus +
  CSAbstruct train;

and ``--pipeline PATH``: a trained pipeline as it is (e.g. ``.demo/pipeline``),
scored on every corpus read (its sections from its own tagger);
``--az-cv-dir DIR``: the full-paper classifier trained per fold by
``AZ=1 run_fullpaper_cv.sh`` (fold ``trainK``'s model never saw AZ-CL fold
``foldK``), scored on its held-out AZ-CL papers (``--folds``: only those); ``--cv-dir DIR``: the
full-paper classifier trained on every field per fold by
``CORESC=1 run_fullpaper_cv.sh`` (fold ``trainK``'s model never saw ART fold
``foldK``), scored on its held-out ART papers, with its sentence vectors
(the trunk's vector head, same pass) and plain all-MiniLM-L6-v2 vectors of
the same sentences, scored by leave-one-out retrieval by CoreSC concept
within each fold (P@1, MAP@R; ``bench_fullpaper.vector_rows``); with
``--member-rows`` also each mixture member alone and the other mixtures of
``bench_fullpaper.MEMBER_MIXTURES``, from the members' probabilities of the
same pass (``bench_fullpaper.member_probabilities``). Its MuLMS-AZ
rows come from ``bench_fullpaper.py --cv-dir DIR`` (the same models).
``--folds fold1 fold2``: only those ART folds' models and papers (a partial
``run_fullpaper_cv.sh`` run with ``FOLDS="train1 train2"``); the baseline rows
stay those of every fold.
``--coresc-cv-dir DIR``: the CoreSC classifier (``configs/coresc_classifier.cfg``)
trained per ART fold by ``CORESC=only run_fullpaper_cv.sh``, its fine labels
scored against the experts' 11 concepts (accuracy, macro-F1) beside the same
LogReg trained on the concepts of the same folds.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fullpaper/bench_fields.py --data ../shared/data \\
        [--all-fields] [--pipeline .demo/pipeline] [--cv-dir training/cv_fields] --out benchmarks/fullpaper/results/fields.json
"""
import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy
from bench_fullpaper import (
    MEMBER_MIXTURES,
    best_labels,
    kept_sentences,
    lookup_label,
    member_probabilities,
    mixture_labels,
    pipeline_predictions,
    sklearn_rows,
    vector_rows,
)

from spacy_rhetoric.evaluation.fullpaper import mean_of, score, sentence_rows
from spacy_rhetoric.evaluation.report import new_report, write_report

ART_FOLDS, ART_SEED = 5, 0
AZ_FOLDS, AZ_SEED = 5, 0
CORPORA = ("ART", "MuLMS-AZ", "AZ-CL")
CROSS_FIELD = {"ART": "MuLMS-AZ", "MuLMS-AZ": "ART", "AZ-CL": "MuLMS-AZ"}  # the corpus a cross-field row adds
# AZ zones -> the prediction whose share the AZ-CL rows report
ZONE_SHARES = {"AIM->objective": (("AIM",), "objective"), "others->background": (("BKG", "OTH", "CTR", "BAS"), "background"),
               "OWN->background": (("OWN",), "background")}
LOGREG = "TF-IDF + heading + position + neighbours LogReg"


def art_fold_names(docs) -> List[str]:
    """Each ART paper's fold (``fold1``..``fold5``): ``readers.coresc.coresc_folds``, the folds the
    training corpora of ``run_fullpaper_cv.sh`` (``CORESC=1``) hold out too."""
    from spacy_rhetoric.readers.coresc import coresc_folds

    return coresc_folds(docs, n_folds=ART_FOLDS, seed=ART_SEED)


def az_fold_names(docs) -> List[str]:
    """Each AZ-CL paper's fold (``fold1``..``fold5``): ``readers.az.az_folds``, seeded here."""
    from spacy_rhetoric.readers.az import az_folds

    return az_folds(docs, n_folds=AZ_FOLDS, seed=AZ_SEED)


def zone_shares(rows: List[Dict], preds: List[Optional[str]]) -> Dict[str, Dict]:
    """Among the rows ``score`` scores (with a coarse gold label, full sentences) of each zone group of
    ``ZONE_SHARES``, the count and the share predicted as its label; {} without AZ zones."""
    from spacy_rhetoric.evaluation.fullpaper import is_full_sentence

    out = {}  # name -> {n, share}
    for name, (zones, label) in ZONE_SHARES.items():
        found = [p for r, p in zip(rows, preds) if r["fine"] in zones and r["gold"] and is_full_sentence(r["text"])]
        if found:
            out[name] = {"n": len(found), "share": sum(p == label for p in found) / len(found)}
    return out


def score_rows(rows: List[Dict], preds: List[Optional[str]]) -> Dict:
    """``evaluation.fullpaper.score``, with the zone shares of AZ-CL rows."""
    out = score(rows, preds)
    if rows and rows[0].get("corpus") == "AZ-CL":
        out["zones"] = zone_shares(rows, preds)
    return out


def pooled_zones(folds: Dict[str, Dict]) -> Dict[str, Dict]:
    """The zone shares of the folds, pooled over their sentences."""
    out: Dict[str, Dict] = {}
    for f in folds.values():
        for name, z in f.get("zones", {}).items():
            acc = out.setdefault(name, {"n": 0, "hits": 0.0})
            acc["n"] += z["n"]
            acc["hits"] += z["share"] * z["n"]
    return {k: {"n": v["n"], "share": v["hits"] / v["n"]} for k, v in out.items()}


def az_cv_rows(cv_dir: Path, docs, rows: List[Dict], only: Optional[List[str]] = None) -> Dict[str, Dict]:
    """The per-fold models of ``run_fullpaper_cv.sh`` with ``AZ=1`` (``<cv_dir>/trainK/model/model-last``,
    trained without AZ-CL fold ``foldK``), each scored on its held-out AZ-CL papers; ``only``: these folds."""
    import spacy

    folds = az_fold_names(docs)
    out = {}
    for fold in sorted(set(folds) & set(only or folds)):
        path = cv_dir / f"train{fold[len('fold'):]}" / "model" / "model-last"
        if not path.exists():
            raise SystemExit(f"--az-cv-dir: no model for AZ-CL {fold} at {path} (run_fullpaper_cv.sh with AZ=1)")
        index = [i for i, f in enumerate(folds) if f == fold]
        preds = [p for doc_preds in pipeline_predictions(spacy.load(path), [docs[i] for i in index]) for p in doc_preds]
        test = [r for r in rows if r["fold"] == fold]
        if len(preds) != len(test):
            raise SystemExit(f"--az-cv-dir: {len(preds)} predictions for {len(test)} rows of {fold}")
        out[fold] = score_rows(test, preds)
    return out


def cv_model_rows(cv_dir: Path, docs, rows: List[Dict], members: Optional[Dict[str, Dict]] = None,
                  only: Optional[List[str]] = None) -> Tuple[List[str], Dict[str, Dict[str, List]]]:
    """The per-fold models of ``run_fullpaper_cv.sh`` with ``CORESC=1`` (``<cv_dir>/trainK/model/model-last``,
    trained without ART fold ``foldK``), each run on its held-out ART papers: one label per row of ``rows``
    (``sentence_rows`` of ``docs``), and per fold the sentence vectors and CoreSC concepts of the kept
    sentences with a concept (``bench_fullpaper.kept_sentences``, the same pass). ``members``: a dict that
    receives per fold each mixture member's probabilities over the fold's rows and the pipe's labels
    (``bench_fullpaper.member_probabilities``, the same pass). ``only``: these ART folds (``rows`` are theirs)."""
    import spacy

    from spacy_rhetoric.extensions import FINE_LABEL, get_span_value

    folds = art_fold_names(docs)
    by_doc: Dict[int, List[str]] = {}
    vectors: Dict[str, Dict[str, List]] = {}
    for fold in sorted(set(folds) & set(only or folds)):
        path = cv_dir / f"train{fold[len('fold'):]}" / "model" / "model-last"
        if not path.exists():
            raise SystemExit(f"--cv-dir: no model for ART {fold} at {path} (run_fullpaper_cv.sh with CORESC=1)")
        nlp = spacy.load(path)
        index = [i for i, f in enumerate(folds) if f == fold]
        fold_vectors: List = []
        if members is None:
            preds = pipeline_predictions(nlp, [docs[i] for i in index], vectors=fold_vectors)
        else:
            scores: List = []
            probs = member_probabilities(nlp, [docs[i] for i in index], scores=scores, vectors=fold_vectors)
            if probs is None:
                raise SystemExit(f"--member-rows: the model at {path} has no mixture members")
            members[fold] = {"probs": probs, "labels": list(nlp.get_pipe("rhetoric_function_classifier").labels)}
            preds = best_labels(scores)
        by_doc.update(zip(index, preds))
        kept = {"vectors": [], "labels": []}
        for i, doc_vectors in zip(index, fold_vectors):
            for sent, vector in zip(kept_sentences(docs[i]), doc_vectors):
                concept = get_span_value(sent, FINE_LABEL)
                if vector is not None and concept:
                    kept["vectors"].append(vector)
                    kept["labels"].append(concept)
        vectors[fold] = kept
        print(f"  ART {fold}: {len(index)} papers, {len(kept['labels'])} vectors", flush=True)
    labels = []
    for doc_index in sorted(by_doc):
        labels.extend(by_doc[doc_index])
    if len(labels) != len(rows):
        raise SystemExit(f"--cv-dir: {len(labels)} predictions for {len(rows)} rows")
    return labels, vectors


def concept_score(rows: List[Dict], preds: List[str]) -> Dict:
    """CoreSC concepts: accuracy and macro-F1 (and per concept F1) over the
    rows with a concept that ``score`` would score (``evaluation.fullpaper.is_full_sentence``)."""
    from sklearn.metrics import f1_score

    from spacy_rhetoric.evaluation.fullpaper import is_full_sentence

    pairs = [(r["fine"], p) for r, p in zip(rows, preds) if r["fine"] and is_full_sentence(r["text"])]
    gold, guess = [g for g, _ in pairs], [p or "none" for _, p in pairs]
    concepts = sorted(set(gold))
    per = f1_score(gold, guess, labels=concepts, average=None, zero_division=0)
    return {"n": len(pairs), "accuracy": float(numpy.mean([g == p for g, p in pairs])),
            "macro_f1": float(numpy.mean(per)), "per_concept_f1": dict(zip(concepts, map(float, per)))}


def coresc_cv_rows(cv_dir: Path, docs, rows: List[Dict]) -> Dict[str, Dict]:
    """The CoreSC classifier per ART fold (``CORESC=only run_fullpaper_cv.sh``: ``<cv_dir>/foldK/model/model-last``,
    trained on the other folds' papers), each fold's ``rhetoric_fine_label`` against the experts' concepts,
    beside the TF-IDF + heading + position + neighbours LogReg trained on the same folds' concepts; the folds
    with a model (a partial run scores the folds it has)."""
    import spacy

    folds = art_fold_names(docs)
    out: Dict[str, Dict] = {"classifier": {}, "logreg": {}}
    concept_rows = [dict(r, label=r["fine"]) for r in rows]
    for fold in sorted(set(folds)):
        path = cv_dir / fold / "model" / "model-last"
        if not path.exists():
            continue
        nlp = spacy.load(path)
        index = [i for i, f in enumerate(folds) if f == fold]
        preds = [p for doc_preds in pipeline_predictions(nlp, [docs[i] for i in index], scores_field="fine_scores")
                 for p in doc_preds]
        test = [r for r in concept_rows if r["fold"] == fold]
        if len(preds) != len(test):
            raise SystemExit(f"--coresc-cv-dir: {len(preds)} predictions for {len(test)} rows of {fold}")
        out["classifier"][fold] = concept_score(test, preds)
        train = [r for r in concept_rows if r["fold"] != fold]
        out["logreg"][fold] = concept_score(test, logreg(train, test))
    if not out["classifier"]:
        raise SystemExit(f"--coresc-cv-dir: no fold model under {cv_dir} (foldK/model/model-last)")
    for name, found in out.items():
        mean = {k: float(numpy.mean([f[k] for f in found.values()])) for k in ("accuracy", "macro_f1")}
        found["mean"] = mean
        print(f"ART CoreSC {name:<10} folds {sorted(k for k in found if k != 'mean')}: accuracy {mean['accuracy']:.3f}"
              f"  macro-F1 {mean['macro_f1']:.3f}", flush=True)
    return out


def raw_concept_vectors(fold_vectors: Dict[str, Dict[str, List]], docs) -> Dict[str, Dict[str, List]]:
    """The same sentences' plain all-MiniLM-L6-v2 vectors (``bench_fullpaper.raw_vector_rows``' encoder)."""
    from bench_fullpaper import RAW_MODEL

    from spacy_rhetoric.evaluation.metrics import raw_transformer_vectors
    from spacy_rhetoric.extensions import FINE_LABEL, get_span_value

    folds = art_fold_names(docs)
    texts: Dict[str, List[str]] = {f: [] for f in fold_vectors}
    labels: Dict[str, List[str]] = {f: [] for f in fold_vectors}
    for doc, fold in zip(docs, folds):
        for sent in kept_sentences(doc):
            concept = get_span_value(sent, FINE_LABEL)
            if concept and fold in texts:
                texts[fold].append(sent.text)
                labels[fold].append(concept)
    order = sorted(texts)
    encoded = raw_transformer_vectors([t for f in order for t in texts[f]], RAW_MODEL, progress=False)
    out, start = {}, 0
    for fold in order:
        out[fold] = {"vectors": list(encoded[start : start + len(texts[fold])]), "labels": labels[fold]}
        start += len(texts[fold])
    return out


def load(data: Path, names=CORPORA):
    """(docs, rows) per corpus of ``names`` and of their cross-field corpora, and the CSAbstruct train rows."""
    import spacy

    from spacy_rhetoric.readers.coresc import read_coresc
    from spacy_rhetoric.readers.fullpaper_corpus import az_docs, csabstruct_docs, mulms_docs

    nlp = spacy.blank("en")
    tagger = spacy.blank("en").add_pipe("rhetoric_section_tagger")
    wanted = set(names) | {CROSS_FIELD[n] for n in names}
    readers = {"ART": lambda: [tagger(d) for d in read_coresc(data / "coresc-art", nlp)],
               "MuLMS-AZ": lambda: mulms_docs(data / "mulms-az" / "train.jsonl", nlp, tagger),
               "AZ-CL": lambda: az_docs(data / "az-cl", nlp, tagger)}
    fold_names = {"ART": art_fold_names, "AZ-CL": az_fold_names}
    corpora = {}
    for name in CORPORA:
        if name not in wanted:
            continue
        docs = readers[name]()
        rows = sentence_rows(docs)
        folds = fold_names[name](docs) if name in fold_names else None
        for row in rows:
            row["corpus"] = name
            if folds is not None:
                row["fold"] = folds[row["doc"]]
        corpora[name] = (docs, rows)
    abstracts = sentence_rows(csabstruct_docs(data / "csabstruct" / "train.jsonl", nlp))
    return corpora, abstracts


Predict = Callable[[List[Dict], List[Dict]], List[str]]


def lookup(train: List[Dict], test: List[Dict]) -> List[str]:
    default = Counter(r["label"] for r in train if r["label"]).most_common(1)[0][0]
    return [lookup_label(r["heading"], default) for r in test]


def logreg(train: List[Dict], test: List[Dict]) -> List[str]:
    return sklearn_rows(train, test, heading=True, position=True, neighbours=True)


def folds_of(rows: List[Dict]) -> List[str]:
    return sorted({r["fold"] for r in rows})


def scored_folds(rows: List[Dict], preds: List[str]) -> Dict[str, Dict]:
    """Scores of one prediction per row, per fold."""
    out = {}
    for fold in folds_of(rows):
        pairs = [(r, p) for r, p in zip(rows, preds) if r["fold"] == fold]
        out[fold] = score_rows([r for r, _ in pairs], [p for _, p in pairs])
    return out


def in_field(rows: List[Dict], predict: Predict, extra: List[Dict] = ()) -> Dict[str, Dict]:
    """Cross-validation over the folds of ``rows`` (``extra``: more training rows)."""
    out = {}
    for fold in folds_of(rows):
        test = [r for r in rows if r["fold"] == fold]
        train = [r for r in rows if r["fold"] != fold] + list(extra)
        out[fold] = score_rows(test, predict(train, test))
    return out


def report_row(results: Dict, corpus: str, name: str, folds: Dict[str, Dict], seconds: float) -> None:
    mean = mean_of(folds)
    zones = pooled_zones(folds)
    if zones:
        mean["zones"] = zones
    results.setdefault(corpus, {})[name] = {"folds": folds, "mean": mean, "seconds": round(seconds, 1)}
    own = mean["own_work_as_background"]
    print(f"{corpus:<9} {name:<72} lenient {mean['lenient']:.3f}  single {mean['single_acc']:.3f}  "
          f"macro-F1 {mean['single_macro_f1']:.3f}  F1 " + " / ".join(
              f"{c[:3]} {f:.2f}" for c, f in mean["per_class_f1"].items())
          + f"  own->bg {own['share']:.3f} (n {own['n']})  echo "
          + json.dumps({k: round(v["share"], 2) for k, v in mean["echo"].items()})
          + "".join(f"  {k} {v['share']:.3f}" for k, v in zones.items()) + f"  {seconds:.0f} s", flush=True)


def member_rows(results: Dict, members: Dict[str, Dict], rows: List[Dict]) -> None:
    """ART rows of each mixture of ``MEMBER_MIXTURES`` whose members the fold models have, from the
    members' probabilities of ``cv_model_rows`` (no model runs again)."""
    have = set.intersection(*(set(m["probs"]) for m in members.values()))
    for name, weights in MEMBER_MIXTURES:
        if set(weights) - have:
            continue  # a member these models do not have
        folds = {}
        for fold, found in members.items():
            test = [r for r in rows if r["fold"] == fold]
            folds[fold] = score(test, mixture_labels(found["probs"], weights, found["labels"], test))
        report_row(results, "ART", f"members: {name}", folds, 0.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA,
                        help="the corpora scored (default: all)")
    parser.add_argument("--all-fields", action="store_true", help="also train on every corpus but the test fold")
    parser.add_argument("--pipeline", type=Path, default=None, help="a trained pipeline, scored on every corpus")
    parser.add_argument("--pipeline-only", action="store_true",
                        help="with --pipeline: only its row (the baseline rows come from another run)")
    parser.add_argument("--cv-dir", type=Path, default=None,
                        help="per-fold models of run_fullpaper_cv.sh with CORESC=1: their ART CV rows and vectors")
    parser.add_argument("--coresc-cv-dir", type=Path, default=None,
                        help="per-fold CoreSC classifiers (run_fullpaper_cv.sh with CORESC=only): concept scores")
    parser.add_argument("--az-cv-dir", type=Path, default=None,
                        help="per-fold models of run_fullpaper_cv.sh with AZ=1: their AZ-CL CV rows")
    parser.add_argument("--member-rows", action="store_true",
                        help="with --cv-dir: each mixture member alone and bench_fullpaper's MEMBER_MIXTURES on ART "
                             "(the same pass)")
    parser.add_argument("--folds", nargs="*", default=None, metavar="FOLD",
                        help="with --cv-dir / --az-cv-dir: only these ART / AZ-CL folds (fold1..fold5) and their "
                             "models (a partial run)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.folds is not None and not (args.folds and set(args.folds) <= {f"fold{k}" for k in range(1, ART_FOLDS + 1)}):
        parser.error(f"--folds: use some of fold1..fold{ART_FOLDS}")
    if args.pipeline_only and not (args.pipeline or args.cv_dir or args.coresc_cv_dir or args.az_cv_dir):
        parser.error("--pipeline-only needs --pipeline, --cv-dir, --coresc-cv-dir or --az-cv-dir")
    if (args.cv_dir or args.coresc_cv_dir) and "ART" not in args.corpora:
        parser.error("--cv-dir and --coresc-cv-dir score ART: keep it in --corpora")
    if args.az_cv_dir and "AZ-CL" not in args.corpora:
        parser.error("--az-cv-dir scores AZ-CL: keep it in --corpora")

    started = time.time()
    corpora, abstracts = load(args.data, args.corpora)
    print("read: " + ", ".join(f"{c} {len(d)} papers" for c, (d, _) in corpora.items())
          + f", CSAbstruct train {len({r['doc'] for r in abstracts})} abstracts ({time.time() - started:.0f} s)",
          flush=True)
    results: Dict[str, Dict] = {}
    for corpus in () if args.pipeline_only else [c for c in CORPORA if c in args.corpora]:
        rows = corpora[corpus][1]
        other_name = CROSS_FIELD[corpus]
        other = corpora[other_name][1]
        for label, predict in (("heading lookup", lookup), (LOGREG, logreg)):
            t0 = time.time()
            report_row(results, corpus, f"{label}: in field ({corpus} CV)", in_field(rows, predict), time.time() - t0)
            t0 = time.time()
            report_row(results, corpus, f"{label}: cross field (CSAbstruct + {other_name})",
                       scored_folds(rows, predict(abstracts + other, rows)), time.time() - t0)
            if args.all_fields:
                t0 = time.time()
                report_row(results, corpus, f"{label}: all fields ({corpus} CV + {other_name} + CSAbstruct)",
                           in_field(rows, predict, extra=abstracts + other), time.time() - t0)

    if args.pipeline:
        import spacy

        t0 = time.time()
        nlp = spacy.load(args.pipeline, exclude=["parser", "tagger", "attribute_ruler", "lemmatizer", "ner",
                                                 "rhetoric_phrase_labeler", "rhetoric_sentence_encoder"])
        for corpus in [c for c in CORPORA if c in args.corpora]:
            docs, rows = corpora[corpus]
            preds = [p for doc_preds in pipeline_predictions(nlp, docs) for p in doc_preds]
            report_row(results, corpus, f"pipeline {args.pipeline} (as it is)", scored_folds(rows, preds),
                       time.time() - t0)
            t0 = time.time()

    if args.az_cv_dir:
        t0 = time.time()
        docs, rows = corpora["AZ-CL"]
        report_row(results, "AZ-CL", f"full-paper classifier {args.az_cv_dir}: AZ-CL CV + MuLMS-AZ + CSAbstruct",
                   az_cv_rows(args.az_cv_dir, docs, rows, only=args.folds), time.time() - t0)

    if args.cv_dir:
        t0 = time.time()
        docs, rows = corpora["ART"]
        if args.folds:
            rows = [r for r in rows if r["fold"] in args.folds]
        members: Optional[Dict[str, Dict]] = {} if args.member_rows else None
        preds, fold_vectors = cv_model_rows(args.cv_dir, docs, rows, members=members, only=args.folds)
        report_row(results, "ART", f"full-paper classifier {args.cv_dir}: all fields (ART CV + MuLMS-AZ + "
                   "CSAbstruct)", scored_folds(rows, preds), time.time() - t0)
        if members:
            member_rows(results, members, rows)
        for name, found in (("trunk vectors", fold_vectors), ("raw all-MiniLM-L6-v2", raw_concept_vectors(
                fold_vectors, docs))):
            result = vector_rows({f: v["vectors"] for f, v in found.items()}, {f: v["labels"] for f, v in found.items()})
            results.setdefault("ART vectors by CoreSC concept", {})[name] = result
            print(f"ART       {name:<72} P@1 {result['mean']['p_at_1']:.3f}  MAP@R {result['mean']['map_at_r']:.3f}",
                  flush=True)

    if args.coresc_cv_dir:
        docs, rows = corpora["ART"]
        results["ART CoreSC concepts"] = coresc_cv_rows(args.coresc_cv_dir, docs, rows)

    report = new_report(
        started,
        art_folds={"n_folds": ART_FOLDS, "seed": ART_SEED, "scored": args.folds or "all"},
        az_folds={"n_folds": AZ_FOLDS, "seed": AZ_SEED, "scored": args.folds or "all"},
        corpora={c: {"papers": len(docs), "scored": sum(r["scored"] for r in rows),
                     "single": sum(r["scored"] and r["single"] for r in rows)}
                 for c, (docs, rows) in corpora.items()},
        rows=results,
    )
    print(f"{report['seconds']} s; " + "; ".join(f"{c}: {v['papers']} papers, {v['scored']} scored sentences "
                                                  f"({v['single']} single)" for c, v in report["corpora"].items()))
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
