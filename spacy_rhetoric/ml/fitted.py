"""Members of a mixture of experts (``ml/experts.py``) that are fitted in
closed form by scikit-learn when the pipe is initialized, not trained by
gradient steps.

Why. On the MuLMS-AZ full papers (``benchmarks/bench_fullpaper.py``,
document-disjoint folds) a scikit-learn logistic regression over TF-IDF
features of the sentence and its neighbours, with the section and the
position, fitted to convergence with balanced class weights, makes other
errors than the context network; averaged with it, it was above the same
features in a ``SparseLinear`` trained by SGD inside the network's loop, and
it recovers the rare ``objective`` class (benchmarks/README.md "Closed-form
experts"). A logistic regression over frozen sentence vectors (e.g.
all-MiniLM-L6-v2) of the sentence and its neighbours adds what the words
alone miss. Neither has anything to learn from gradients, so they are fitted
once, by the library that does it well, and stored as plain data
(``linear_models``: no pickle).

A fitted member is a thinc ``Model`` with ``attrs["fitted"] = True``:

- ``rhetoric_function_classifier.initialize`` calls :func:`fit_members` with
  every gold sentence of the training corpus (the reference docs: their
  sections are the true ones, not the section-dropped training copies);
  a member learns from the docs that are full papers (``segments.is_paper``,
  each distinct text once: a corpus may repeat its papers);
- ``experts`` leaves fitted members out of the training output (the
  network's loss is unchanged) and averages them in at prediction;
- before fitting (or with no paper among the examples) ``attrs["state"]``
  is None and the member is silent: ``experts`` gives its weight to the
  others;
- at prediction a member only computes the rows where it speaks (full-paper
  sentences outside ``silent_sections``), the others get a uniform row that
  ``experts`` weighs 0.

The fitted state (vectorizer vocabulary and idf, coefficients, the pipe's
label order) is in ``attrs["state"]``, saved and loaded with the model.
The features: ``tfidf_expert``: TF-IDF 1..``ngram_size``-grams of the
sentence, of the previous and of the next sentence (``neighbour_weight``
times, same vocabulary, separate columns), the section one-hot and the
position buckets (:func:`context_matrix`); ``embedding_expert``: the
L2-normalised vectors of a sentence-transformers model (``model_name``,
resolved offline by ``util.resolve_hf_model``) of the sentence and of its
neighbours (``neighbour_weight`` times), the section one-hot and positions.
Both run on the CPU (scikit-learn, numpy) and hand their probabilities to
the model's device; the sentence-transformers model runs where
``util.torch_device`` says.
"""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from ..linear_models import logreg_from_dict, logreg_to_dict, new_tfidf, tfidf_from_dict, tfidf_to_dict
from ..section_headings import SENTENCE_SECTIONS, UNKNOWN
from .devices import to_host
from .segments import SentenceBatch, paper_rows, sections_of, sentence_headings

FITTED = "fitted"
N_POSITION_BINS = 10
MAX_INDEX = 5
N_CONTEXT = len(SENTENCE_SECTIONS) + 2 * N_POSITION_BINS + MAX_INDEX + 1
_SECTION_INDEX = {name: i for i, name in enumerate(SENTENCE_SECTIONS)}


# ---------------------------------------------------------------- features

def sentence_texts(X: Tuple[List[Doc], Ragged]) -> List[str]:
    """The text of every sentence row of ``X = (docs, indices)``."""
    docs, indices = X
    offsets = to_host(indices.dataXd).tolist()
    out, row = [], 0
    for doc, n in zip(docs, to_host(indices.lengths).tolist()):
        out.extend(doc[int(offsets[row + i][0]) : int(offsets[row + i][1])].text for i in range(n))
        row += n
    return out


def neighbour_rows(lengths: Sequence[int]) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Row index of the previous and of the next sentence of the same doc
    (-1: none), for docs of ``lengths`` sentences in a row."""
    prev, nxt, row = [], [], 0
    for n in lengths:
        prev.extend([-1] + list(range(row, row + n - 1)) if n else [])
        nxt.extend(list(range(row + 1, row + n)) + [-1] if n else [])
        row += n
    return numpy.asarray(prev, dtype="int64"), numpy.asarray(nxt, dtype="int64")


def heading_runs(X: Tuple[List[Doc], Ragged]) -> List[int]:
    """Lengths of the runs of consecutive sentences of a doc under the same
    heading (``sent._.rhetoric_heading``; a doc without headings is one
    run). Runs by heading, not by section category: topical headings that
    are all section "unknown" are runs of their own."""
    headings = sentence_headings(X)
    out, row = [], 0
    for n in to_host(X[1].lengths).tolist():
        for i in range(n):
            if i == 0 or headings[row + i] != headings[row + i - 1]:
                out.append(0)
            out[-1] += 1
        row += n
    return out


def context_matrix(X: Tuple[List[Doc], Ragged], sections: bool = True) -> numpy.ndarray:
    """``[n, N_CONTEXT]``: each sentence's section category (one-hot over
    ``SENTENCE_SECTIONS``), its relative position in its run of sentences
    under one heading (``heading_runs``) and in its doc
    (``N_POSITION_BINS`` buckets each) and its index in the run
    (0 .. ``MAX_INDEX``, the last bucket for the rest). ``sections=False``:
    the section columns stay 0 (a member of abstracts and plain text, where
    the section is "abstract" in training and "unknown" in plain text)."""
    names = sections_of(X)
    out = numpy.zeros((len(names), N_CONTEXT), dtype="float32")
    for i, name in enumerate(names if sections else []):
        out[i, _SECTION_INDEX.get(name, _SECTION_INDEX[UNKNOWN])] = 1.0
    base = len(SENTENCE_SECTIONS)
    row = 0
    for n in heading_runs(X):
        for i in range(n):
            out[row + i, base + min(N_POSITION_BINS - 1, int(i / n * N_POSITION_BINS))] = 1.0
            out[row + i, base + 2 * N_POSITION_BINS + min(i, MAX_INDEX)] = 1.0
        row += n
    row = 0
    for n in to_host(X[1].lengths).tolist():
        for i in range(n):
            out[row + i, base + N_POSITION_BINS + min(N_POSITION_BINS - 1, int(i / n * N_POSITION_BINS))] = 1.0
        row += n
    return out


def _shifted(matrix, index: numpy.ndarray):
    """Rows ``index`` of ``matrix`` (a zero row where ``index`` is -1);
    dense or scipy sparse."""
    from scipy.sparse import csr_matrix, issparse, vstack

    if issparse(matrix):
        padded = vstack([matrix.tocsr(), csr_matrix((1, matrix.shape[1]), dtype=matrix.dtype)]).tocsr()
        return padded[numpy.where(index < 0, matrix.shape[0], index)]
    padded = numpy.vstack([matrix, numpy.zeros((1, matrix.shape[1]), dtype=matrix.dtype)])
    return padded[numpy.where(index < 0, matrix.shape[0], index)]


def _tfidf_features(model: Model, X, vectorizer):
    from scipy.sparse import csr_matrix, hstack

    weight = model.attrs["neighbour_weight"]
    T = vectorizer.transform(sentence_texts(X))
    prev, nxt = neighbour_rows(to_host(X[1].lengths).tolist())
    return hstack([T, csr_matrix(context_matrix(X, model.attrs["use_sections"])), weight * _shifted(T, prev),
                   weight * _shifted(T, nxt)]).tocsr()


_ENCODERS: Dict[Tuple[str, int], Any] = {}


def _encoder(name: str, max_length: int):
    """The sentence-transformers model ``name``, loaded once per process."""
    from .st_models import load_sentence_transformer

    key = (name, int(max_length))
    if key not in _ENCODERS:
        _ENCODERS[key] = load_sentence_transformer(name, max_length=max_length)
    return _ENCODERS[key]


def _embedding_features(model: Model, X, _unused=None) -> numpy.ndarray:
    from .st_models import encode

    texts = sentence_texts(X)
    vectors = encode(_encoder(model.attrs["model_name"], model.attrs["max_length"]), texts,
                     batch_size=model.attrs["batch_size"])
    norms = numpy.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / numpy.clip(norms, 1e-12, None)
    weight = model.attrs["neighbour_weight"]
    prev, nxt = neighbour_rows(to_host(X[1].lengths).tolist())
    return numpy.hstack([vectors, weight * _shifted(vectors, prev), weight * _shifted(vectors, nxt),
                         context_matrix(X, model.attrs["use_sections"])]).astype("float64")


# ---------------------------------------------------------------- members

SCOPES = ("papers", "others")


def _fitted_member(name: str, kind: str, attrs: Dict[str, Any], docs: str = "papers",
                   use_sections: bool = True, learn_from: Optional[str] = None) -> Model:
    if docs not in SCOPES:
        raise RhetoricError(f"Unknown docs {docs!r} for a fitted member: use one of {SCOPES}")
    if learn_from not in (None, docs, "all"):
        raise RhetoricError(f"Unknown learn_from {learn_from!r} for a fitted member: use {docs!r} or 'all'")
    return Model(name if docs == "papers" else f"{name}_{docs}", _fitted_forward, init=_fitted_init, dims={"nO": None},
                 attrs={FITTED: True, "kind": kind, "state": None, "docs": docs,
                        "learn_from": learn_from or docs, "use_sections": bool(use_sections), **attrs})


def speaks(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool = False) -> numpy.ndarray:
    """1.0 on the rows of ``X`` a fitted member learns from (``is_train``)
    or speaks on: the sentences of full papers (``segments.is_paper``;
    at prediction not those of its ``silent_sections``) for ``docs =
    "papers"``, the others (abstracts, plain text) for ``"others"`` -- and
    at prediction the sentences of papers in its ``paper_sections`` (a
    member of abstracts may speak on a paper's abstract: it still learns
    from the other docs only)."""
    if model.attrs.get("docs", "papers") == "others":
        also = () if is_train else model.attrs.get("paper_sections", ())
        on_papers = paper_rows(X)
        # + at prediction the rows of papers in its ``paper_sections`` (e.g. a paper's abstract)
        return 1.0 - on_papers + (on_papers - paper_rows(X, also) if also else 0.0)
    return paper_rows(X, () if is_train else model.attrs.get("silent_sections", ()))


def tfidf_expert(ngram_size: int = 2, min_df: int = 2, neighbour_weight: float = 0.5, C: float = 5.0,
                 class_weight: Optional[str] = "balanced", max_iter: int = 3000,
                 silent_sections: Sequence[str] = (), docs: str = "papers", use_sections: bool = True,
                 normalize_digits: bool = False,
                 paper_sections: Sequence[str] = ()) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """A closed-form member: TF-IDF (sublinear tf) 1..``ngram_size``-grams of
    the sentence and its neighbours + section + position ->
    ``LogisticRegression(C, class_weight)`` (module docstring). ``docs``:
    "papers" or "others" (:func:`speaks`); ``use_sections``: the section
    one-hot is a feature; ``normalize_digits``: every digit reads 0 and
    one-character tokens count ("0.0 %" of "2.5 %"), so numbers of a shape
    share a term (``linear_models.digits_to_zero``); ``paper_sections``
    (``docs = "others"`` only): sections of papers it speaks on too."""
    if paper_sections and docs != "others":
        raise RhetoricError("paper_sections is for a member of the other docs (docs='others')")
    return _fitted_member("tfidf_expert", "tfidf", {
        "ngram_size": int(ngram_size), "min_df": int(min_df), "neighbour_weight": float(neighbour_weight),
        "C": float(C), "class_weight": class_weight, "max_iter": int(max_iter),
        "silent_sections": list(silent_sections), "normalize_digits": bool(normalize_digits),
        "paper_sections": list(paper_sections)}, docs=docs, use_sections=use_sections)


def embedding_expert(model_name: str, neighbour_weight: float = 0.5, C: float = 1.0,
                     class_weight: Optional[str] = "balanced", max_iter: int = 3000, max_length: int = 128,
                     batch_size: int = 64, silent_sections: Sequence[str] = (), docs: str = "papers",
                     use_sections: bool = True,
                     learn_from: Optional[str] = None) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """A closed-form member: frozen sentence vectors of ``model_name`` (a
    sentence-transformers model) of the sentence and its neighbours +
    section + position -> ``LogisticRegression(C, class_weight)``.
    ``learn_from = "all"``: it learns from every doc (e.g. the abstracts
    beside the papers), its features doubled with a copy that is 0 outside
    ``docs`` (what the two kinds of doc share, and what is their own), and
    still speaks on ``docs`` only."""
    return _fitted_member("embedding_expert", "embedding", {
        "model_name": str(model_name), "neighbour_weight": float(neighbour_weight), "C": float(C),
        "class_weight": class_weight, "max_iter": int(max_iter), "max_length": int(max_length),
        "batch_size": int(batch_size), "silent_sections": list(silent_sections)}, docs=docs,
        use_sections=use_sections, learn_from=learn_from)


def finetuned_expert(model_name: str, epochs: float = 1.0, learn_rate: float = 8e-5, head_learn_rate: float = 1e-3,
                     batch_size: int = 16, max_length: int = 128, frozen_layers: int = 2, context_chars: int = 150,
                     class_weight_power: float = 0.5, seed: int = 0, silent_sections: Sequence[str] = (),
                     docs: str = "papers", use_sections: bool = True) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """A member fine-tuned at initialize, not fitted in closed form: the top
    layers of the Hugging Face encoder ``model_name`` over the sentence
    paired with its heading and neighbours, beside section + position ->
    linear -> softmax (``ml/finetuned.py``)."""
    from .finetuned import finetuned_settings

    return _fitted_member("finetuned_expert", "finetuned", {
        **finetuned_settings(model_name, epochs, learn_rate, head_learn_rate, batch_size, max_length, frozen_layers,
                             context_chars, class_weight_power, seed),
        "silent_sections": list(silent_sections)}, docs=docs, use_sections=use_sections)


def is_fitted_member(model: Model) -> bool:
    return bool(model.attrs.get(FITTED))


def fitted_members(model: Model) -> List[Model]:
    """The fitted members anywhere in ``model``."""
    return [node for node in model.walk() if is_fitted_member(node)]


def _fitted_init(model: Model, X=None, Y=None) -> None:
    """Nothing to allocate: the member is fitted by :func:`fit_members`."""


# model.id -> (the state dict itself, its vectorizer, its classifier): holding the dict keeps the check
# "same state" an identity test (an id() of a freed dict could come back for a new one)
_RUNTIME: Dict[int, Tuple[Dict[str, Any], Any, Any]] = {}


def _predictors(model: Model):
    """The vectorizer (None for embeddings) and classifier of the member's
    state, rebuilt once per state."""
    state = model.attrs["state"]
    cached = _RUNTIME.get(model.id)
    if cached is not None and cached[0] is state:
        return cached[1], cached[2]
    vectorizer = tfidf_from_dict(state["vectorizer"]) if state.get("vectorizer") else None
    classifier = logreg_from_dict(state["classifier"])
    _RUNTIME[model.id] = (state, vectorizer, classifier)
    return vectorizer, classifier


def _features(model: Model, X, vectorizer):
    features = _tfidf_features(model, X, vectorizer) if model.attrs["kind"] == "tfidf" else \
        _embedding_features(model, X)
    if model.attrs.get("learn_from", model.attrs["docs"]) != "all":
        return features
    own = speaks(model, X, is_train=True)[:, None]  # 1 on the member's own docs
    if hasattr(features, "multiply"):
        from scipy.sparse import hstack

        return hstack([features, features.multiply(own)]).tocsr()
    return numpy.hstack([features, features * own])


def _subset(X: Tuple[List[Doc], Ragged], keep: numpy.ndarray):
    """The docs of ``X`` with a row where ``keep`` is set, whole (their
    neighbours and positions need every sentence), as a new batch, and per
    such doc (first row, sentences, kept sentences). The section names the
    batch has read already (``segments.SentenceBatch``) go with it, so the
    features do not read them from the docs again."""
    from thinc.api import NumpyOps

    from .pooling import make_indices

    docs, indices = X
    offsets = to_host(indices.dataXd).tolist()
    out_docs, out_offsets, rows, row = [], [], [], 0
    for doc, n in zip(docs, to_host(indices.lengths).tolist()):
        kept = [i for i in range(n) if keep[row + i]]
        if kept:
            out_docs.append(doc)
            out_offsets.append([tuple(offsets[row + i]) for i in range(n)])
            rows.append((row, n, kept))
        row += n
    read = getattr(X, "sections", None) or {}
    sections = {flag: [names[r + i] for r, n, _ in rows for i in range(n)] for flag, names in read.items()}
    return SentenceBatch(out_docs, make_indices(NumpyOps(), out_offsets), sections), rows


def _fitted_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool) -> Tuple[Floats2d, Callable]:
    state = model.attrs["state"]
    n_rows = int(to_host(X[1].lengths).sum())
    labels = list(state["labels"]) if state else []
    n_out = len(labels) or (model.get_dim("nO") if model.has_dim("nO") else 1)
    out = numpy.full((n_rows, n_out), 1.0 / n_out, dtype="float32")
    if state is not None and n_rows:
        speak = speaks(model, X) > 0
        if speak.any():
            sub, rows = _subset(X, speak)
            if model.attrs["kind"] == "finetuned":
                from .finetuned import predict_finetuned

                probs, classes = predict_finetuned(model, sub, sentence_texts(sub),
                                                   context_matrix(sub, model.attrs["use_sections"]))
            else:
                vectorizer, classifier = _predictors(model)
                probs = classifier.predict_proba(_features(model, sub, vectorizer))
                classes = classifier.classes_
            columns = [labels.index(c) for c in classes]
            start = 0
            for row, n, kept in rows:
                block = numpy.zeros((n, n_out), dtype="float32")
                block[:, columns] = probs[start : start + n]
                out[[row + i for i in kept]] = block[kept]
                start += n
    return model.ops.asarray2f(out), lambda dY: []


def fit_members(members: Sequence[Model], X: Tuple[List[Doc], Ragged], gold: Sequence[Optional[str]],
                labels: Sequence[str]) -> Dict[str, Dict[str, int]]:
    """Fit each fitted member on the sentence rows of ``X`` (reference docs
    and their gold sentences) of the docs it learns from (:func:`speaks`:
    full papers, or the others), each distinct text once; ``gold``: per row
    its gold label (the sentence's first label, as the readers store it;
    None: unlabelled, context only; a label not in ``labels`` is left out).
    A member with fewer than two labels to learn is left unfitted (silent).
    Returns counts per member name."""
    from sklearn.linear_model import LogisticRegression

    docs, indices = X
    lengths = to_host(indices.lengths).tolist()
    papers = paper_rows(X) > 0
    known = set(labels)
    out = {}
    for member in members:
        member.attrs["state"] = None
        want_papers = member.attrs.get("docs", "papers") == "papers"
        learn_all = member.attrs.get("learn_from") == "all"
        keep, seen, row, n_docs = numpy.zeros(len(gold), dtype=bool), set(), 0, 0
        for doc, n in zip(docs, lengths):
            if n and (learn_all or bool(papers[row]) == want_papers) and doc.text not in seen:
                seen.add(doc.text)
                keep[row : row + n] = True
                n_docs += 1
            row += n
        sub, _ = _subset(X, keep)
        sub_gold = [g for g, k in zip(gold, keep) if k]
        pick = [i for i, g in enumerate(sub_gold) if g in known]
        y = [sub_gold[i] for i in pick]
        out[member.name] = {"docs": n_docs, "sentences": len(sub_gold), "labelled": len(pick)}
        if len(set(y)) < 2:
            continue
        if member.attrs["kind"] == "finetuned":
            from .finetuned import fit_finetuned

            member.attrs["state"] = fit_finetuned(member.attrs, sub, sentence_texts(sub),
                                                  context_matrix(sub, member.attrs["use_sections"]), pick, y, labels)
            continue
        params = {"C": member.attrs["C"], "max_iter": member.attrs["max_iter"],
                  "class_weight": member.attrs["class_weight"]}
        vectorizer, vec_state = None, None
        if member.attrs["kind"] == "tfidf":
            vec_params = {"ngram_range": [1, member.attrs["ngram_size"]], "min_df": member.attrs["min_df"],
                          "sublinear_tf": True}
            if member.attrs.get("normalize_digits"):
                vec_params.update({"normalize_digits": True, "token_pattern": r"(?u)\b\w+\b"})
            try:
                vectorizer = new_tfidf(vec_params).fit(sentence_texts(sub))
            except ValueError:  # no term in min_df docs: too little text to fit
                vec_params["min_df"] = 1
                vectorizer = new_tfidf(vec_params).fit(sentence_texts(sub))
            vec_state = tfidf_to_dict(vectorizer, vec_params)
        features = _features(member, sub, vectorizer)
        classifier = LogisticRegression(**params).fit(features[pick], y)
        member.attrs["state"] = {"labels": list(labels), "vectorizer": vec_state,
                                 "classifier": logreg_to_dict(classifier, params)}
    return out
