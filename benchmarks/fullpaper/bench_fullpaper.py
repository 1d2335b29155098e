"""Full papers: does the classifier read what a sentence does, or copy its section?

Document-disjoint cross-validation over the five folds of the MuLMS-AZ train
file (``train1``..``train5``, the dataset's own folds; 36 papers with expert
zones): for each fold, every row is trained on the other four folds' papers
and scored on the fold's papers; figures per fold and their mean, all rows in
one run.

Scored sentences: a gold coarse label, >= 25 characters and >= 4 words (body
text as ``readers.mulms`` reads it: captions, metadata and references left
out). The scores are defined once, in ``spacy_rhetoric.evaluation.fullpaper``
(``benchmarks/fullpaper/bench_fields.py`` uses them too):

* **lenient**: the prediction is among the sentence's acceptable labels
  (``conclusion`` accepts ``result`` or ``other``);
* **single**: sentences with exactly one coarse label other than conclusion:
  accuracy and macro-F1 over background / objective / method / result, per-class
  F1, the confusion matrix (summed over folds);
* **echo**: per section category (``rhetoric_section_tagger``), among the
  single sentences whose gold label differs from the section's own label
  (introduction -> background, method -> method, results -> result), the share
  the model gives the section's label (1.0: it copies the section).

Rows: majority label; a fixed heading lookup (7 lines on the raw heading);
TF-IDF LogReg; + the heading bucket (the tagger's section category); + the
sentence's position in its section and in the paper; + the neighbouring
sentences' words (all scikit-learn, trained on the MuLMS training folds
only); ``--demo-pipeline``: a trained pipeline as it is (e.g. the demo before
this classifier: not trained on MuLMS, so the same model for every fold);
``--cv-dir``: the full-paper classifier trained per fold by
``benchmarks/fullpaper/run_fullpaper_cv.sh`` (``<cv-dir>/<fold>/model/model-last``,
trained on CSAbstruct train + the other folds' papers); ``--cv-before``: the
same for an earlier classifier (its own rows); each also with the sections
hidden (``no sections``: plain text); ``--member-rows``: for a
``FullPaperSentenceClassifier.v4`` in ``--cv-dir``, each member alone and
the mixtures of ``MEMBER_MIXTURES`` (the same trained models, their
``experts`` weights set at prediction); ``--vectors``: the ``--cv-dir``
models' sentence vectors (the trunk's vector head, from the same pass as
the labels) scored by leave-one-out retrieval of each held-out fold's
sentences by their zone (P@1, MAP@R), against plain all-MiniLM-L6-v2
vectors (sentence-transformers) of the same sentences and (``--st-steps N``)
against all-MiniLM-L6-v2 fine-tuned per fold on the training folds' zoned
sentences with sentence-transformers' ``BatchAllTripletLoss`` for N steps
(``evaluation.st_baseline.finetune_triplets``: P x K
batches of ``--st-batch-size`` sentences, AdamW 2e-5, seeded).
``--folds train1 train2``: every row on those folds only (a partial
``run_fullpaper_cv.sh`` run with ``FOLDS``; not with ``--st-steps``).

    python benchmarks/fullpaper/bench_fullpaper.py --data ../shared/data --cv-dir training/fullpaper_cv \\
        --demo-pipeline training/old_demo_pipeline --out benchmarks/fullpaper/results/fullpaper_cv.json
"""
import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy

from spacy_rhetoric.evaluation.cv import cv_scores, vector_rows, zone_vector_rows, zoned_sentences
from spacy_rhetoric.evaluation.encoders import st_vector_rows
from spacy_rhetoric.evaluation.fullpaper import (  # noqa: F401 - the scores' one definition; re-exported
    SECTION_LABEL,
    SINGLE_CLASSES,
    mean_of,
    score,
    sentence_rows,
)
from spacy_rhetoric.evaluation.pipelines import (  # noqa: F401 - bench_fields.py reads them here too
    best_labels,
    kept_sentences,
    member_probabilities,
    mixture_labels,
    pipeline_predictions,
    pipeline_scores,
)
from spacy_rhetoric.evaluation.report import new_report, write_report
from spacy_rhetoric.evaluation.st_baseline import MODEL as RAW_MODEL  # the --vectors baseline

FOLDS = ("train1", "train2", "train3", "train4", "train5")
LOOKUP = (  # the fixed heading lookup: first pattern found in the lower-cased heading
    (r"introduction", "background"),
    (r"background|related work", "background"),
    (r"method|experimental|materials", "method"),
    (r"result", "result"),
    (r"discussion", "result"),
    (r"conclu|summary|outlook", "other"),
    (r"abstract", "objective"),
)


# ---------------------------------------------------------------- baselines

def lookup_label(heading: str, default: str) -> str:
    low = heading.lower()
    for pattern, label in LOOKUP:
        if re.search(pattern, low):
            return label
    return default


def _position_features(rows):
    from scipy.sparse import csr_matrix

    feats = []
    for r in rows:
        f = numpy.zeros(10 + 10 + 6, dtype="float32")
        f[min(9, int(r["pos_section"] * 10))] = 1
        f[10 + min(9, int(r["pos_paper"] * 10))] = 1
        f[20 + min(5, r["idx_section"])] = 1
        feats.append(f)
    return csr_matrix(numpy.vstack(feats))


def _section_features(rows, sections):
    from scipy.sparse import csr_matrix

    index = {s: i for i, s in enumerate(sections)}
    m = numpy.zeros((len(rows), len(sections)), dtype="float32")
    for j, r in enumerate(rows):
        m[j, index.get(r["section"], index["unknown"])] = 1
    return csr_matrix(m)


def sklearn_rows(train, test, *, heading: bool, position: bool, neighbours: bool) -> List[str]:
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    sections = sorted({r["section"] for r in train + test} | {"unknown"})
    fit_rows = [r for r in train if r["label"]]
    vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    vec.fit([r["text"] for r in train])

    def features(rows):
        parts = [vec.transform([r["text"] for r in rows])]
        if heading:
            parts.append(_section_features(rows, sections))
        if position:
            parts.append(_position_features(rows))
        if neighbours:
            parts.append(0.5 * vec.transform([r["prev"] for r in rows]))
            parts.append(0.5 * vec.transform([r["next"] for r in rows]))
        return hstack(parts).tocsr()

    clf = LogisticRegression(C=5.0, max_iter=3000, class_weight="balanced")
    clf.fit(features(fit_rows), [r["label"] for r in fit_rows])
    return list(clf.predict(features(test)))


# ---------------------------------------------------------------- pipelines


def raw_vector_rows(docs) -> Dict[str, Any]:
    """``vector_rows`` of plain ``RAW_MODEL`` vectors (``evaluation.metrics.raw_transformer_vectors``, mean
    pooling, offline copy) of the same sentences."""
    from spacy_rhetoric.evaluation.metrics import raw_transformer_vectors

    raw_texts, raw_zones = zoned_sentences(docs, FOLDS)
    encoded = raw_transformer_vectors([t for fold in raw_texts for t in raw_texts[fold]], RAW_MODEL, progress=False)
    raw_vectors, start = {}, 0
    for fold in raw_texts:
        raw_vectors[fold] = list(encoded[start : start + len(raw_texts[fold])])
        start += len(raw_texts[fold])
    result = vector_rows(raw_vectors, raw_zones)
    print(f"raw {RAW_MODEL} vectors by zone: P@1 {result['mean']['p_at_1']:.3f}  MAP@R {result['mean']['map_at_r']:.3f}",
          flush=True)
    return result


def cv_rows(run, docs, name: str, cv_dir: Path, folds: Sequence[str] = FOLDS
            ) -> Dict[str, List[Optional[numpy.ndarray]]]:
    """``run`` the per-fold models of ``cv_dir`` (``folds`` of them) with and
    without sections; the sentence vectors of the pass with sections, by fold."""
    import spacy

    models = {fold: spacy.load(cv_dir / fold / "model" / "model-last") for fold in folds}
    fold_vectors: Dict[str, List[Optional[numpy.ndarray]]] = {}
    for hide in (False, True):
        def cv_fold(fold, train, test, test_docs, hide=hide):
            vectors: List[List[Optional[numpy.ndarray]]] = []
            preds = pipeline_predictions(models[fold], [docs[i] for i in test_docs], hide_sections=hide,
                                         vectors=None if hide else vectors)
            if not hide:
                fold_vectors[fold] = [v for doc_vectors in vectors for v in doc_vectors]
            return [p for doc_preds in preds for p in doc_preds]

        run(name + (" (no sections)" if hide else ""), cv_fold)
    return fold_vectors


# Mixtures scored with --member-rows: (name, weight per member of the full-paper classifier on papers, by name:
# the network, the TF-IDF, MiniLM-vector and fine-tuned members). A row naming a member the models do not have is
# left out. One trained model per fold gives every row: each member's probabilities once.
# ABSTRACTS: the abstracts' member (learned from CSAbstruct), on a paper's abstract only (weighed there by
# [model.weights.paper_abstract]); each row's weights are normalised over the members that speak on it.
NETWORK, TFIDF, MINILM, FINETUNED = "network", "tfidf_expert", "embedding_expert", "finetuned_expert"
ABSTRACTS = "tfidf_expert_others"


def _mix(*pairs):
    return dict(zip(pairs[::2], pairs[1::2]))


MEMBER_MIXTURES = (
    ("network alone", _mix(NETWORK, 1)), ("TF-IDF member alone", _mix(TFIDF, 1)),
    ("MiniLM member alone", _mix(MINILM, 1)), ("fine-tuned member alone", _mix(FINETUNED, 1)),
    ("network + TF-IDF 0.3 / 0.7", _mix(NETWORK, 0.3, TFIDF, 0.7)),
    ("TF-IDF + MiniLM 0.6 / 0.4", _mix(TFIDF, 0.6, MINILM, 0.4)),
    ("v2: network + TF-IDF + MiniLM 0.3 / 0.4 / 0.3", _mix(NETWORK, 0.3, TFIDF, 0.4, MINILM, 0.3)),
    ("four 0.2 / 0.4 / 0.1 / 0.3", _mix(NETWORK, 0.2, TFIDF, 0.4, MINILM, 0.1, FINETUNED, 0.3)),
    ("four 0.2 / 0.3 / 0.1 / 0.4", _mix(NETWORK, 0.2, TFIDF, 0.3, MINILM, 0.1, FINETUNED, 0.4)),
    ("four 0.25 / 0.35 / 0.15 / 0.25", _mix(NETWORK, 0.25, TFIDF, 0.35, MINILM, 0.15, FINETUNED, 0.25)),
    ("network + TF-IDF + fine-tuned 0.2 / 0.4 / 0.4", _mix(NETWORK, 0.2, TFIDF, 0.4, FINETUNED, 0.4)),
    ("network + TF-IDF + fine-tuned 0.3 / 0.4 / 0.3", _mix(NETWORK, 0.3, TFIDF, 0.4, FINETUNED, 0.3)),
    ("network + TF-IDF + fine-tuned 0.1 / 0.5 / 0.4", _mix(NETWORK, 0.1, TFIDF, 0.5, FINETUNED, 0.4)),
    ("network + TF-IDF + fine-tuned 0.1 / 0.3 / 0.6", _mix(NETWORK, 0.1, TFIDF, 0.3, FINETUNED, 0.6)),
    ("TF-IDF + fine-tuned 0.5 / 0.5", _mix(TFIDF, 0.5, FINETUNED, 0.5)),
    ("v3 shipped: network + TF-IDF + fine-tuned 0.2 / 0.4 / 0.4, abstracts' 0.3 on abstracts",
     _mix(NETWORK, 0.2, TFIDF, 0.4, FINETUNED, 0.4, ABSTRACTS, 0.3)),
    ("v2 + abstracts' 0.3 on abstracts", _mix(NETWORK, 0.3, TFIDF, 0.4, MINILM, 0.3, ABSTRACTS, 0.3)),
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--cv-dir", type=Path, default=None)
    parser.add_argument("--cv-before", type=Path, default=None,
                        help="per-fold models of an earlier classifier, same layout as --cv-dir (its own rows)")
    parser.add_argument("--demo-pipeline", type=Path, default=None)
    parser.add_argument("--member-rows", action="store_true",
                        help="--cv-dir models with experts: each member alone and the MEMBER_MIXTURES rows")
    parser.add_argument("--vectors", action="store_true",
                        help="also score the CV models' sentence vectors by zone (P@1, MAP@R) against plain "
                             "all-MiniLM-L6-v2 vectors of the same sentences")
    parser.add_argument("--st-steps", type=int, default=0,
                        help="with --vectors: also all-MiniLM-L6-v2 fine-tuned per fold with sentence-transformers' "
                             "BatchAllTripletLoss for this many steps (0: not)")
    parser.add_argument("--st-batch-size", type=int, default=16)
    parser.add_argument("--folds", nargs="*", default=list(FOLDS), metavar="FOLD",
                        help="only these MuLMS-AZ folds (train1..train5), for every row: a partial --cv-dir run")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not args.folds or not set(args.folds) <= set(FOLDS):
        parser.error(f"--folds: use some of {', '.join(FOLDS)}")
    if args.st_steps < 0 or args.st_batch_size < 4:
        parser.error("--st-steps must be >= 0 and --st-batch-size >= 4")
    if args.st_steps and len(args.folds) < len(FOLDS):
        parser.error("--st-steps fine-tunes on the other folds: use every fold (no --folds)")
    if args.st_steps and not args.vectors:
        parser.error("--st-steps needs --vectors")
    if args.out:
        from spacy_rhetoric.io import check_output

        check_output(args.out, what="--out", inputs=[args.data])
    return args


def main(argv=None) -> int:
    args = parse_args(argv)

    import spacy

    from spacy_rhetoric.extensions import get_doc_value
    from spacy_rhetoric.readers.section_labels import mulms_docs

    started = time.time()
    nlp_blank = spacy.blank("en")
    tagger = spacy.blank("en").add_pipe("rhetoric_section_tagger")
    docs = mulms_docs(args.data / "mulms-az" / "train.jsonl", nlp_blank, tagger)
    rows = sentence_rows(docs)
    results: Dict[str, Dict] = {}

    def run(name, predict_fold):
        results[name] = cv_scores(docs, rows, args.folds, predict_fold)
        m = results[name]["mean"]
        print(f"{name:<44} lenient {m['lenient']:.3f}  single acc {m['single_acc']:.3f}  "
              f"macro-F1 {m['single_macro_f1']:.3f}  obj F1 {m['per_class_f1']['objective']:.3f}  "
              f"echo {json.dumps({k: round(v['share'], 2) for k, v in m['echo'].items()})}", flush=True)

    def majority(fold, train, test, test_docs):
        label = Counter(r["label"] for r in train if r["label"]).most_common(1)[0][0]
        return [label] * len(test)

    def lookup(fold, train, test, test_docs):
        default = Counter(r["label"] for r in train if r["label"]).most_common(1)[0][0]
        return [lookup_label(r["heading"], default) for r in test]

    run("majority", majority)
    run("fixed heading lookup", lookup)
    run("TF-IDF LogReg", lambda f, tr, te, d: sklearn_rows(tr, te, heading=False, position=False, neighbours=False))
    run("TF-IDF + heading LogReg", lambda f, tr, te, d: sklearn_rows(tr, te, heading=True, position=False,
                                                                      neighbours=False))
    run("TF-IDF + heading + position LogReg", lambda f, tr, te, d: sklearn_rows(tr, te, heading=True, position=True,
                                                                                 neighbours=False))
    run("TF-IDF + heading + position + neighbours LogReg",
        lambda f, tr, te, d: sklearn_rows(tr, te, heading=True, position=True, neighbours=True))

    if args.demo_pipeline:
        demo = spacy.load(args.demo_pipeline, exclude=["parser", "tagger", "attribute_ruler", "lemmatizer", "ner",
                                                       "rhetoric_phrase_labeler", "rhetoric_sentence_encoder"],
                          config={"components": {"rhetoric_section_tagger": {"unmatched": "model"}}})

        def demo_fold(fold, train, test, test_docs):
            return [p for preds in pipeline_predictions(demo, [docs[i] for i in test_docs]) for p in preds]

        run(f"demo pipeline before ({args.demo_pipeline.name})", demo_fold)

    vector_results: Dict[str, Any] = {}

    scored_docs = [d for d in docs if get_doc_value(d, "fold") in args.folds]
    if args.vectors:  # the baseline: plain all-MiniLM-L6-v2 vectors of the same sentences
        vector_results[f"raw {RAW_MODEL}"] = raw_vector_rows(scored_docs)
    if args.vectors and args.st_steps:
        texts, zones = zoned_sentences(docs, FOLDS)
        found = st_vector_rows(texts, zones, steps=args.st_steps, batch_size=args.st_batch_size)
        vector_results[f"ST BatchAllTriplet fine-tune ({args.st_steps} steps)"] = found
        print(f"ST BatchAllTriplet fine-tune ({args.st_steps} steps of {args.st_batch_size}) vectors by zone: "
              f"P@1 {found['mean']['p_at_1']:.3f}  MAP@R {found['mean']['map_at_r']:.3f}", flush=True)

    for name, cv_dir in (("full-paper classifier before", args.cv_before), ("full-paper classifier", args.cv_dir)):
        if not cv_dir:
            continue
        fold_vectors = cv_rows(run, docs, name, cv_dir, args.folds)
        if args.vectors:
            vector_results[name] = found = zone_vector_rows(docs, fold_vectors)
            print(f"  vectors by zone: P@1 {found['mean']['p_at_1']:.3f}  MAP@R {found['mean']['map_at_r']:.3f}",
                  flush=True)

    if args.member_rows and args.cv_dir:
        models = {fold: spacy.load(args.cv_dir / fold / "model" / "model-last") for fold in args.folds}
        probs = {}
        for fold in args.folds:
            test_docs = [docs[i] for i, d in enumerate(docs) if get_doc_value(d, "fold") == fold]
            probs[fold] = member_probabilities(models[fold], test_docs)
        have = set.intersection(*(set(p) for p in probs.values()))
        for name, weights in MEMBER_MIXTURES:
            if set(weights) - have:
                continue  # a member these models do not have
            def mixture(fold, train, test, test_docs, weights=weights):
                labels = list(models[fold].get_pipe("rhetoric_function_classifier").labels)
                return mixture_labels(probs[fold], weights, labels, test)

            run(f"members: {name}", mixture)

    report = new_report(started, folds=list(args.folds), papers=len(docs), scored=sum(r["scored"] for r in rows),
                        single=sum(r["scored"] and r["single"] for r in rows), rows=results)
    if vector_results:
        report["vectors_by_zone"] = vector_results
    print(f"{report['papers']} papers, {report['scored']} scored sentences ({report['single']} single), "
          f"{report['seconds']:.0f} s")
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
