"""Evaluation of sentence embeddings and of the function classifier.

Protocols (the figures in ``RESULTS.md`` use exactly these):

Retrieval (SciToricsBERT §4, Musgrave et al. 2020)
    Every vector is L2-normalised (a zero vector stays zero) and searched with
    a faiss ``IndexFlatIP`` (exact cosine similarity). Each sentence is a query
    and all *other* sentences are references (leave-one-out). The query itself
    is removed by id, not by position, so duplicate vectors (which tie with the
    query at similarity 1) cannot push it out or be dropped in its place.
    Neighbours are ordered by decreasing similarity; ties are broken by the
    lower sentence index (deterministic whenever a tied group lies within the
    retrieved window).
    ``R`` = number of other sentences with the query's label.
    P@1 = share of queries whose nearest other sentence has the query's label.
    MAP@R = mean over queries of ``1/R * sum_{i<=R} P(i) * rel(i)`` where
    ``rel(i)`` is 1 when the i-th neighbour has the query's label and ``P(i)``
    is the precision among the first i neighbours (Musgrave et al. 2020).
    Queries whose label occurs only once (``R = 0``) have no correct answer;
    like pytorch-metric-learning's "lone query" rule they are left out of both
    averages and counted in ``n_lone_queries`` (if every query is lone, both
    scores are 0 with a warning).

Same-group recall (COSAEMB §4, full-text paragraph retrieval)
    Each vector (a section chunk) is a query against all *other* vectors
    (leave-one-out, as above), ranked by Euclidean distance on the raw
    vectors (COSAEMB's protocol and training metric) or by cosine.
    Recall@k = share of queries with at least one vector of their own group
    (paper) among the k nearest. Queries with no other vector of their group
    have no correct answer: left out and counted in ``n_lone_queries``.

Downstream classifiers (Bartz Guedes & da Silva 2023, §4.1)
    Classifiers are trained on the TRAIN embeddings and scored on the TEST
    (dev) embeddings with F1-micro. All use scikit-learn defaults except KNN,
    which uses ``n_neighbors = round(sqrt(n_train))`` and
    ``weights="distance"`` as in the paper; the stochastic ones (RF, MLP, DT)
    get ``random_state=seed``. Inputs are L2-normalised first (the
    sentence-transformers MiniLM model the paper used normalises its output).

Clustering (same paper)
    k-means (``k`` = number of distinct labels, ``n_init=10``,
    ``random_state=seed``) on the L2-normalised vectors; ARI and AMI between
    the k-means partition and the gold labels; Silhouette of the k-means
    partition (Euclidean on unit vectors, a monotone function of cosine). For
    more than ``silhouette_sample`` (10,000) points the silhouette is computed
    on a seeded random sample of that size. ``silhouette_labels`` is the
    silhouette of the *gold* partition (how well labels separate), extra.

t-SNE
    scikit-learn ``TSNE`` (PCA init, ``random_state=seed``) on at most
    ``max_points`` (5,000) seeded-sampled vectors, PNG via matplotlib Agg.
"""
import math
import warnings
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy

from ..errors import RhetoricError
from ..extensions import LABEL, VECTOR, get_span_value, labelled_spans
from ..io import atomic_path
from .neighbours import as_matrix, cosine_neighbours, l2_normalize, nearest_neighbours

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


# ---------------------------------------------------------------------------
# helpers


def _check_labels(X: numpy.ndarray, labels: Sequence) -> numpy.ndarray:
    y = numpy.asarray([str(label) for label in labels])
    if len(y) != X.shape[0]:
        raise ValueError(f"{X.shape[0]} vectors but {len(y)} labels")
    return y


# ---------------------------------------------------------------------------
# retrieval


def retrieval_scores(vectors, labels: Sequence[str]) -> Dict[str, float]:
    """Leave-one-out P@1 and MAP@R on L2-normalised vectors (cosine).

    See the module docstring for the exact definitions. Extra keys:
    ``n_queries`` (queries scored) and ``n_lone_queries`` (left out, R = 0).

    The figures equal pytorch-metric-learning's ``AccuracyCalculator``
    (``precision_at_1``, ``mean_average_precision_at_r`` with the query set as
    reference; checked in ``tests/test_evaluation.py``). This implementation
    is kept because it is faster (``benchmarks/encoder/bench_retrieval.py`` compares
    the two), breaks ties by index (deterministic figures with duplicate
    sentences) and counts the lone queries it leaves out.
    """
    X = as_matrix(vectors)
    y = _check_labels(X, labels)
    n = len(y)
    if n < 2:
        raise RhetoricError("retrieval needs at least 2 vectors")
    _, inverse, counts = numpy.unique(y, return_inverse=True, return_counts=True)
    R = counts[inverse] - 1  # other sentences with the query's label
    scored = R > 0
    if not scored.any():
        # Undefined; 0 keeps a training-time scorer on a tiny dev set alive.
        warnings.warn("retrieval_scores: every label occurs only once, no query has a correct answer")
        return {"p_at_1": 0.0, "map_at_r": 0.0, "n_queries": 0, "n_lone_queries": n}
    k = int(R.max())
    idx, _ = cosine_neighbours(X, k)
    rel = y[idx] == y[:, None]  # [n, k] neighbour i has the query's label
    p_at_1 = rel[scored, 0].mean()
    ranks = numpy.arange(1, k + 1)
    precision_at_i = numpy.cumsum(rel, axis=1) / ranks
    within_r = ranks[None, :] <= R[:, None]
    ap_at_r = (precision_at_i * rel * within_r).sum(axis=1)[scored] / R[scored]
    return {
        "p_at_1": float(p_at_1),
        "map_at_r": float(ap_at_r.mean()),
        "n_queries": int(scored.sum()),
        "n_lone_queries": int((~scored).sum()),
    }


def same_group_recall(vectors, groups: Sequence[str], ks: Sequence[int] = (1, 3), *,
                      metric: str = "euclidean") -> Dict[str, float]:
    """Leave-one-out Recall@k of "a neighbour from the query's own group"
    (module docstring): ``{"recall_at_1": ..., "recall_at_3": ...,
    "n_queries": ..., "n_lone_queries": ...}``."""
    X = as_matrix(vectors)
    g = _check_labels(X, groups)
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise RhetoricError(f"ks must be positive integers, got {ks}")
    if len(g) < 2:
        raise RhetoricError("same_group_recall needs at least 2 vectors")
    _, inverse, counts = numpy.unique(g, return_inverse=True, return_counts=True)
    scored = counts[inverse] > 1
    out: Dict[str, float] = {}
    k_max = min(ks[-1], len(g) - 1)
    idx, _ = nearest_neighbours(X, k_max, metric=metric)
    hit = g[idx] == g[:, None]  # [n, k_max]
    for k in ks:
        first_k = hit[:, : min(k, k_max)].any(axis=1)
        out[f"recall_at_{k}"] = float(first_k[scored].mean()) if scored.any() else 0.0
    out["n_queries"] = int(scored.sum())
    out["n_lone_queries"] = int((~scored).sum())
    return out


# ---------------------------------------------------------------------------
# downstream classifiers and clustering


def downstream_classifiers(n_train: int, *, seed: int = 0) -> Dict[str, object]:
    """The five scikit-learn classifiers of Bartz Guedes & da Silva (2023)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    k = max(1, min(n_train, int(round(math.sqrt(n_train)))))
    return {
        "knn": KNeighborsClassifier(n_neighbors=k, weights="distance"),
        "svm": SVC(random_state=seed),
        "rf": RandomForestClassifier(random_state=seed),
        "mlp": MLPClassifier(random_state=seed),
        "dt": DecisionTreeClassifier(random_state=seed),
    }


def downstream_scores(
    train_X, train_y, test_X, test_y, *, seed: int = 0, classifiers: Optional[Sequence[str]] = None
) -> Dict[str, float]:
    """F1-micro of KNN / SVM / RF / MLP / DT trained on ``train_X`` and scored
    on ``test_X`` (keys ``knn``, ``svm``, ``rf``, ``mlp``, ``dt``)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import f1_score

    Xtr, Xte = l2_normalize(train_X), l2_normalize(test_X)
    ytr, yte = _check_labels(Xtr, train_y), _check_labels(Xte, test_y)
    if len(set(ytr)) < 2:
        raise RhetoricError("downstream classifiers need at least 2 labels in the training set")
    models = downstream_classifiers(len(ytr), seed=seed)
    if classifiers is not None:
        unknown = set(classifiers) - set(models)
        if unknown:
            raise RhetoricError(f"unknown classifier(s) {sorted(unknown)}; choose from {sorted(models)}")
        models = {name: models[name] for name in classifiers}
    scores = {}
    for name, model in models.items():
        with warnings.catch_warnings():
            # MLP with default max_iter may stop before convergence: the
            # protocol keeps the defaults, so the warning is expected noise.
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(Xtr, ytr)
        scores[name] = float(f1_score(yte, model.predict(Xte), average="micro"))
    return scores


def clustering_scores(
    vectors, labels: Sequence[str], *, seed: int = 0, silhouette_sample: int = 10_000
) -> Dict[str, float]:
    """k-means (k = number of labels) -> ARI, AMI, Silhouette (+ ``silhouette_labels``)."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import (
        adjusted_mutual_info_score,
        adjusted_rand_score,
        silhouette_score,
    )

    X = l2_normalize(vectors)
    y = _check_labels(X, labels)
    k = len(set(y))
    if k < 2 or k >= len(y):
        raise RhetoricError(f"clustering needs 2 <= number of labels < n, got {k} labels for {len(y)} vectors")
    clusters = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(X)
    sample = silhouette_sample if len(y) > silhouette_sample else None

    def silhouette(partition) -> float:
        if len(set(partition)) < 2:
            return 0.0
        return float(silhouette_score(X, partition, metric="euclidean", sample_size=sample, random_state=seed))

    return {
        "ari": float(adjusted_rand_score(y, clusters)),
        "ami": float(adjusted_mutual_info_score(y, clusters)),
        "silhouette": silhouette(clusters),
        "silhouette_labels": silhouette(y),
    }


def tsne_plot(
    vectors, labels: Sequence[str], path: Union[str, Path], *, seed: int = 0,
    max_points: int = 5000, title: Optional[str] = None,
) -> Path:
    """2-d t-SNE of the L2-normalised vectors, coloured by label, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.manifold import TSNE

    X = l2_normalize(vectors)
    y = _check_labels(X, labels)
    if len(y) < 3:
        raise RhetoricError("t-SNE needs at least 3 vectors")
    if len(y) > max_points:
        keep = numpy.sort(numpy.random.default_rng(seed).choice(len(y), max_points, replace=False))
        X, y = X[keep], y[keep]
    perplexity = float(min(30.0, max(1.0, (len(y) - 1) / 3)))
    points = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(X)
    fig, ax = plt.subplots(figsize=(7, 6), dpi=120)
    cmap = plt.get_cmap("tab10" if len(set(y)) <= 10 else "tab20")
    for i, label in enumerate(sorted(set(y))):
        mask = y == label
        ax.scatter(points[mask, 0], points[mask, 1], s=4, alpha=0.7, color=cmap(i % cmap.N),
                   label=f"{label} ({int(mask.sum())})")
    ax.legend(markerscale=3, fontsize=8, loc="best")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title or f"t-SNE of {len(y)} sentence vectors")
    fig.tight_layout()
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------
# vectors


def raw_transformer_vectors(
    sentences: Sequence[str],
    model_name: str = DEFAULT_MODEL,
    pooling: str = "mean",
    batch_size: int = 64,
    *,
    max_length: int = 256,
    progress: bool = True,
) -> numpy.ndarray:
    """Sentence vectors of a plain Hugging Face model, no fine-tuning.

    ``pooling="mean"`` averages the last hidden states over real tokens
    (attention-mask aware); ``"first"``/``"cls"`` takes the first token. The
    model is loaded and run by sentence-transformers (``spacy_rhetoric.ml.st_models``:
    name through ``resolve_hf_model``, length-sorted batches, inference mode);
    the result is a float32 ``[n, hidden]`` array in input order, not normalised.
    """
    from ..ml.st_models import encode, load_sentence_transformer

    model = load_sentence_transformer(model_name, max_length=max_length, pooling=pooling)
    return encode(model, sentences, batch_size=batch_size, progress=progress)


def gold_sentences(doc, *, field: str = LABEL) -> List[Tuple[int, int, str]]:
    """``(start, end, label)`` of the labelled gold sentences of ``doc``."""
    return labelled_spans(doc, field=field)


def _fresh_doc(vocab, gold_doc, spans: List[Tuple[int, int, str]]):
    """A copy of ``gold_doc``'s tokens in ``vocab`` with the gold sentence
    boundaries and, of its stored values, only what a paper reader gives a
    pipeline as input -- headings, sections and the title
    (``readers.section_labels.copy_section_fields``), so a section-aware
    classifier is scored as it runs on papers -- never the labels."""
    from spacy.tokens import Doc

    from ..readers.section_labels import copy_section_fields

    starts = {start for start, _, _ in spans}
    if gold_doc.has_annotation("SENT_START"):
        starts.update(sent.start for sent in gold_doc.sents)
    sent_starts = [i in starts or i == 0 for i in range(len(gold_doc))]
    # A labelled span's end also starts a sentence.
    for _, end, _ in spans:
        if end < len(gold_doc):
            sent_starts[end] = True
    fresh = Doc(
        vocab,
        words=[t.text for t in gold_doc],
        spaces=[bool(t.whitespace_) for t in gold_doc],
        sent_starts=sent_starts,
    )
    return copy_section_fields(gold_doc, fresh)


def annotate_gold_docs(nlp, docs: Iterable, *, batch_size: int = 32, progress: bool = True):
    """Run ``nlp`` over copies of gold ``docs`` keeping their sentence boundaries.

    Sentence splitters (``sentencizer``/``senter`` factories) are skipped; other
    components run as they are (the parser respects preset boundaries). Yields
    ``(predicted_doc, gold_spans)`` with ``gold_spans`` = ``[(start, end, label)]``.
    """
    from tqdm import tqdm

    from ..readers.common import sentence_splitters

    docs = list(docs)
    skip = sentence_splitters(nlp)
    spans = [gold_sentences(doc) for doc in docs]
    fresh = [_fresh_doc(nlp.vocab, doc, s) for doc, s in zip(docs, spans)]
    with nlp.select_pipes(disable=skip):
        predicted = nlp.pipe(fresh, batch_size=batch_size)
        for doc, gold in tqdm(zip(predicted, spans), total=len(docs), desc="annotate", unit="doc",
                              disable=not progress):
            yield doc, gold


def _collect(pairs, field: str):
    values, labels, skipped = [], [], 0
    for doc, gold in pairs:
        for start, end, label in gold:
            value = get_span_value(doc[start:end], field)
            if value is None:
                skipped += 1
                continue
            values.append(value)
            labels.append(label)
    return values, labels, skipped


def _warn_skipped(skipped: int, kept: int, what: str) -> None:
    if skipped:
        warnings.warn(
            f"{skipped} of {skipped + kept} gold sentences got no {what} from the pipeline "
            f"(their sentence boundaries changed or no component sets it) and were skipped"
        )


def sentence_vectors(nlp, docs: Iterable, *, progress: bool = True) -> Tuple[numpy.ndarray, List[str]]:
    """Run ``nlp`` over gold ``docs`` (gold sentence boundaries kept) and return
    ``(vectors, gold_labels)``: ``sent._.rhetoric_vector`` of every labelled
    gold sentence with its gold label. Sentences without a vector are skipped
    with a warning that counts them."""
    vectors, labels, skipped = _collect(annotate_gold_docs(nlp, docs, progress=progress), VECTOR)
    _warn_skipped(skipped, len(vectors), "rhetoric_vector")
    if not vectors:
        raise RhetoricError("the pipeline set no sentence vectors: does it have a rhetoric_sentence_encoder or a classifier with a vector head?")
    return numpy.vstack(vectors).astype("float32"), labels


def classifier_scores(gold: Sequence[str], predicted: Sequence[Optional[str]]) -> Dict[str, object]:
    """Micro/macro F1 and per-label P/R/F over sentences: the scores of
    ``spacy_rhetoric.evaluation.scorers.sentence_label_scores`` (the definition shared
    with the classifier's registered scorer: a missing prediction (None) is
    wrong, F1-micro = accuracy, macro over the labels in gold or predictions),
    under the keys of ``spacy-rhetoric evaluate``."""
    from .scorers import sentence_label_scores

    s = sentence_label_scores(gold, predicted)
    return {
        "f1_micro": s["f_micro"],
        "f1_macro": s["f_macro"],
        "n_sentences": s["n_sentences"],
        "n_unpredicted": s["n_unpredicted"],
        "per_label": s["per_label"],
    }


def classifier_label_sets(nlp) -> Dict[str, List[str]]:
    """``{label_field: labels}`` of the pipeline's ``rhetoric_function_classifier``
    components (e.g. ``{"label": [...], "fine_label": [...]}``)."""
    out: Dict[str, List[str]] = {}
    for name, pipe in nlp.pipeline:
        if nlp.get_pipe_meta(name).factory == "rhetoric_function_classifier":
            out.setdefault(pipe.label_field, []).extend(pipe.labels)
    return out


def check_label_field(nlp, label_field: str, *, name: str = "the pipeline") -> Optional[List[str]]:
    """The labels of the classifier that writes ``label_field`` (None when the
    pipeline has no ``rhetoric_function_classifier`` and the field is the
    default ``label``, which another component may write). A ValueError naming
    the fields the pipeline does write otherwise."""
    label_sets = classifier_label_sets(nlp)
    if label_field in label_sets:
        return sorted(set(label_sets[label_field]))
    if not label_sets and label_field == LABEL:
        return None
    written = ", ".join(repr(f) for f in sorted(label_sets)) or "none"
    raise RhetoricError(f"label field {label_field!r}: no rhetoric_function_classifier of {name} writes it "
                     f"(classifier label fields: {written})")


def label_mismatch(gold: Sequence[str], classifier_labels: Optional[Iterable[str]],
                   predicted: Sequence[Optional[str]] = ()) -> Dict[str, object]:
    """Where the gold label set and the classifier's cannot match: gold labels
    the classifier can never predict (not among ``classifier_labels``, or
    never predicted when the label set is unknown), with the number of gold
    sentences carrying them, and classifier labels never seen in gold (e.g.
    PMC's ``methods`` against CSAbstruct's ``method``). Empty lists when the
    sets agree."""
    gold_set = set(str(g) for g in gold)
    if classifier_labels is None:
        model_set = set(str(p) for p in predicted if p is not None)
    else:
        model_set = set(str(label) for label in classifier_labels)
    unpredictable = sorted(gold_set - model_set)
    missing = set(unpredictable)
    return {
        "gold_not_in_classifier": unpredictable,
        "n_gold_not_in_classifier": sum(1 for g in gold if str(g) in missing),
        "classifier_not_in_gold": sorted(model_set - gold_set),
    }


def evaluate_classifier(nlp, docs: Iterable, *, progress: bool = True,
                        label_field: str = LABEL) -> Dict[str, object]:
    """Score the pipeline's sentence labels (``label_field``: "label" =
    ``sent._.rhetoric_label``, "fine_label" = ``sent._.rhetoric_fine_label``)
    against the gold labels of ``docs``, gold sentence boundaries kept."""
    gold, pred = [], []
    for doc, spans in annotate_gold_docs(nlp, docs, progress=progress):
        for start, end, label in spans:
            gold.append(label)
            pred.append(get_span_value(doc[start:end], label_field))
    if not gold:
        raise RhetoricError("no labelled gold sentences in the evaluation docs")
    return classifier_scores(gold, pred)


def annotated_outputs(nlp, docs: Iterable, *, progress: bool = True,
                      label_field: str = LABEL) -> Dict[str, object]:
    """One pipeline run collecting both vectors and predicted labels (of
    ``label_field``): ``{"labels", "vectors" (array or None), "predicted"
    (list or None), "n_without_vector"}``."""
    gold, vectors, predicted, missing = [], [], [], 0
    for doc, spans in annotate_gold_docs(nlp, docs, progress=progress):
        for start, end, label in spans:
            span = doc[start:end]
            gold.append(label)
            vectors.append(get_span_value(span, VECTOR))
            predicted.append(get_span_value(span, label_field))
    missing = sum(v is None for v in vectors)
    return {
        "labels": gold,
        "vectors": vectors,
        "predicted": predicted if any(p is not None for p in predicted) else None,
        "n_without_vector": missing,
    }
