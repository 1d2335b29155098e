"""Baselines a user could assemble without spacy_rhetoric, on our splits and F1.

Rows (scikit-learn LogisticRegression, default C = 1, lbfgs, on one feature set each):

- ``tfidf``: TF-IDF of word 1-2-grams of the sentence (sublinear tf, min_df 2, lower-cased);
- ``tfidf+pos``: + position features of the sentence in its document (relative position,
  is-first, is-last, one-hot of the relative position in tenths);
- ``tfidf+pos+nb``: + the TF-IDF rows of the previous and next sentence (zeros at the ends);
- ``minilm+pos+nb``: frozen all-MiniLM-L6-v2 mean-pooled vectors of the sentence, the previous
  and the next one (zeros at the ends) + position features (standardised);
- ``all``: everything above in one model.

Datasets: CSAbstruct train -> dev (``../shared/data/csabstruct``), and PMC-Sents-FULL's public
dev file split by article with ``spacy_rhetoric.readers.splits.split_doc_ids`` (share 0.8, seed 0: the
``spacy-rhetoric split`` of ``benchmarks/classifier/run_pmc.sh``) train -> test. PMC sentences of an article
are in the released file's order (shuffled within the article by the dataset authors), so position
and neighbour features carry little there. Scores: ``spacy_rhetoric.evaluation.scorers.sentence_label_scores``
(F1-micro = accuracy, macro over the labels in gold or predictions), the definition of
``spacy train`` and ``spacy-rhetoric evaluate``. Nothing is tuned on the reported side.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/classifier/baselines.py \
        [--data-dir ../shared/data] [--datasets csabstruct,pmc] [--cache training/baselines_cache]
"""
import argparse
import json
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy

DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
N_BINS = 10
FEATURE_SETS = ["tfidf", "tfidf+pos", "tfidf+pos+nb", "minilm+pos+nb", "all"]

Docs = List[Tuple[List[str], List[str]]]  # (sentences, labels) per document


def read_csabstruct(path: Path) -> Docs:
    docs = []
    with open(path, encoding="utf8") as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                docs.append((list(rec["sentences"]), list(rec["labels"])))
    return docs


def read_pmc_split(path: Path, *, share: float = 0.8, seed: int = 0) -> Tuple[Docs, Docs]:
    from spacy_rhetoric.readers.splits import split_doc_ids

    articles: "OrderedDict[str, Tuple[List[str], List[str]]]" = OrderedDict()
    with open(path, encoding="utf8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            sent, label, pmc = (rec.get("sentence") or "").strip(), rec.get("label"), rec.get("id")
            if sent and label and pmc:
                articles.setdefault(pmc, ([], []))
                articles[pmc][0].append(sent)
                articles[pmc][1].append(label)
    train_ids, test_ids = split_doc_ids(list(articles), share=share, seed=seed)
    assert not set(train_ids) & set(test_ids)
    return [articles[i] for i in train_ids], [articles[i] for i in test_ids]


def flatten(docs: Docs) -> Tuple[List[str], List[str], List[int]]:
    sents = [s for doc in docs for s in doc[0]]
    labels = [lab for doc in docs for lab in doc[1]]
    return sents, labels, [len(doc[0]) for doc in docs]


def position_features(lengths: Sequence[int]) -> numpy.ndarray:
    rows = []
    for n in lengths:
        for i in range(n):
            rel = i / (n - 1) if n > 1 else 0.0
            onehot = [0.0] * N_BINS
            onehot[min(int(rel * N_BINS), N_BINS - 1)] = 1.0
            rows.append([rel, float(i == 0), float(i == n - 1)] + onehot)
    return numpy.asarray(rows, dtype="float32")


def shifted(X, lengths: Sequence[int], offset: int):
    """Row i -> row i + offset of the same document (zeros outside it); sparse or dense."""
    import scipy.sparse as sp

    n = X.shape[0]
    src = numpy.full(n, -1)
    start = 0
    for length in lengths:
        for i in range(length):
            j = i + offset
            if 0 <= j < length:
                src[start + i] = start + j
        start += length
    rows = numpy.nonzero(src >= 0)[0]
    P = sp.csr_matrix((numpy.ones(len(rows)), (rows, src[rows])), shape=(n, n))
    out = P @ X
    return out if sp.issparse(X) else numpy.asarray(out)


def minilm_vectors(sents: List[str], cache: Path, name: str) -> numpy.ndarray:
    path = cache / f"{name}.npy"
    if path.exists():
        vecs = numpy.load(path)
        if vecs.shape[0] == len(sents):
            return vecs
    from spacy_rhetoric.evaluation.metrics import raw_transformer_vectors

    vecs = raw_transformer_vectors(sents, "sentence-transformers/all-MiniLM-L6-v2", pooling="mean",
                                   progress=False)
    cache.mkdir(parents=True, exist_ok=True)
    numpy.save(path, vecs)
    return vecs


def run_dataset(name: str, train: Docs, test: Docs, cache: Path, feature_sets: List[str]) -> List[Dict]:
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from spacy_rhetoric.evaluation.scorers import sentence_label_scores

    tr_s, tr_y, tr_len = flatten(train)
    te_s, te_y, te_len = flatten(test)
    tfidf = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, lowercase=True)
    T_tr, T_te = tfidf.fit_transform(tr_s), tfidf.transform(te_s)
    P_tr, P_te = position_features(tr_len), position_features(te_len)
    feats = {
        "tfidf": (lambda L, T, P: T),
        "pos": (lambda L, T, P: sp.csr_matrix(P)),
        "nb": (lambda L, T, P: sp.hstack([shifted(T, L, -1), shifted(T, L, 1)])),
    }
    need_minilm = any("minilm" in f or f == "all" for f in feature_sets)
    if need_minilm:
        V_tr = minilm_vectors(tr_s, cache, f"{name}_train")
        V_te = minilm_vectors(te_s, cache, f"{name}_test")
        dense_tr = numpy.hstack([V_tr, shifted(V_tr, tr_len, -1), shifted(V_tr, tr_len, 1), P_tr])
        dense_te = numpy.hstack([V_te, shifted(V_te, te_len, -1), shifted(V_te, te_len, 1), P_te])
        scaler = StandardScaler().fit(dense_tr)
        D_tr, D_te = scaler.transform(dense_tr), scaler.transform(dense_te)
    rows = []
    for fs in feature_sets:
        t0 = time.time()
        if fs == "minilm+pos+nb":
            X_tr, X_te = D_tr, D_te
        elif fs == "all":
            X_tr = sp.hstack([T_tr, feats["nb"](tr_len, T_tr, P_tr), sp.csr_matrix(D_tr)]).tocsr()
            X_te = sp.hstack([T_te, feats["nb"](te_len, T_te, P_te), sp.csr_matrix(D_te)]).tocsr()
        else:
            parts = fs.split("+")
            X_tr = sp.hstack([feats[p](tr_len, T_tr, P_tr) for p in parts]).tocsr()
            X_te = sp.hstack([feats[p](te_len, T_te, P_te) for p in parts]).tocsr()
        clf = LogisticRegression(max_iter=3000)
        clf.fit(X_tr, tr_y)
        scores = sentence_label_scores(te_y, list(clf.predict(X_te)))
        rows.append({
            "dataset": name, "features": fs, "f_micro": scores["f_micro"], "f_macro": scores["f_macro"],
            "n_train": len(tr_y), "n_test": len(te_y), "docs_train": len(train), "docs_test": len(test),
            "seconds": round(time.time() - t0, 1),
        })
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--datasets", default="csabstruct,pmc")
    parser.add_argument("--features", default=",".join(FEATURE_SETS))
    parser.add_argument("--cache", type=Path, default=Path("training/baselines_cache"),
                        help="MiniLM vectors are cached here")
    parser.add_argument("--output", type=Path, default=None, help="JSON rows")
    args = parser.parse_args(argv)
    feature_sets = [f for f in args.features.split(",") if f]
    unknown = set(feature_sets) - set(FEATURE_SETS)
    if unknown:
        parser.error(f"unknown feature sets {sorted(unknown)}: use {FEATURE_SETS}")
    rows = []
    for dataset in [d for d in args.datasets.split(",") if d]:
        if dataset == "csabstruct":
            train = read_csabstruct(args.data_dir / "csabstruct" / "train.jsonl")
            test = read_csabstruct(args.data_dir / "csabstruct" / "dev.jsonl")
            label = "CSAbstruct train -> dev"
        elif dataset == "pmc":
            train, test = read_pmc_split(args.data_dir / "pmc-sents-full" / "dev.jsonl")
            label = "PMC-Sents-FULL article-disjoint train -> test"
        else:
            parser.error(f"unknown dataset {dataset!r}")
        for row in run_dataset(dataset, train, test, args.cache, feature_sets):
            row["split"] = label
            rows.append(row)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(rows, indent=2))
    print("| data (train -> test sentences) | features + LogisticRegression | F1-micro | F1-macro |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['split']} ({r['n_train']:,} -> {r['n_test']:,}) | {r['features']} | "
              f"{r['f_micro']:.3f} | {r['f_macro']:.3f} |")


if __name__ == "__main__":
    main()
