"""A fitted member of the full-paper mixture (``ml/members.py``): a
scikit-learn logistic regression over TF-IDF features, fitted in closed form
by the member-fitting step (``pipeline/fitting.py``), with the settings of
its ``TfidfMember.v1`` block (``min_df`` too high for the data is an error,
never lowered behind the config's back).

Why. On full papers a logistic regression over TF-IDF features of the
sentence and its neighbours, with the section and the position, fitted to
convergence with balanced class weights, makes other errors than the
context network, and recovers rare classes such as ``objective``. It has
nothing to learn from gradients, so it is fitted once, by the library that
does it well.

The features: TF-IDF (sublinear tf) 1..``ngram_size``-grams of the sentence,
of the previous and of the next sentence (``neighbour_weight`` times, same
vocabulary, separate columns), the section one-hot and the position buckets
(``members.context_matrix``), and with a ``cues`` block the citation and
person cues of the sentence and around it (``agency.py``). The fitted
vectorizer and classifier live in
the member's :class:`TfidfShim` and are stored as plain data
(``linear_models``: vocabulary, idf, coefficients; no pickle).
"""
from typing import Any, List, Optional, Sequence, Tuple

import numpy
import srsly
from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from ..linear_models import logreg_from_dict, logreg_to_dict, new_tfidf, tfidf_from_dict, tfidf_to_dict
from .agency import AgencyCues
from .devices import to_host
from .members import MemberShim, context_matrix, fitted_member, neighbour_rows


def _shifted(matrix, index: numpy.ndarray):
    """Rows ``index`` of the sparse ``matrix`` (a zero row where ``index`` is -1)."""
    from scipy.sparse import csr_matrix, vstack

    padded = vstack([matrix.tocsr(), csr_matrix((1, matrix.shape[1]), dtype=matrix.dtype)]).tocsr()
    return padded[numpy.where(index < 0, matrix.shape[0], index)]


def tfidf_features(member: Model, X, texts: Sequence[str], vectorizer, context: Optional[numpy.ndarray] = None):
    """The member's feature rows of ``X`` (module docstring)."""
    from scipy.sparse import csr_matrix, hstack

    weight = member.attrs["neighbour_weight"]
    T = vectorizer.transform(list(texts))
    prev, nxt = neighbour_rows(to_host(X[1].lengths).tolist())
    if context is None:
        context = context_matrix(X, member.attrs["use_sections"])
    parts = [T, csr_matrix(context), weight * _shifted(T, prev), weight * _shifted(T, nxt)]
    if member.attrs.get("cues"):
        parts.append(csr_matrix(AgencyCues(**member.attrs["cues"]).matrix(texts, to_host(X[1].lengths).tolist())))
    return hstack(parts).tocsr()


class TfidfShim(MemberShim):
    """``_model``: ``(vectorizer, classifier)`` once fitted; ``cfg["state"]``:
    their plain-data form (what is saved)."""

    def fit(self, member, X, texts, context, pick, y, labels) -> None:
        from sklearn.linear_model import LogisticRegression

        attrs = member.attrs
        params = {"C": attrs["C"], "max_iter": attrs["max_iter"], "class_weight": attrs["class_weight"]}
        vec_params = {"ngram_range": [1, attrs["ngram_size"]], "min_df": attrs["min_df"], "sublinear_tf": True}
        if attrs.get("normalize_digits"):
            vec_params.update({"normalize_digits": True, "token_pattern": r"(?u)\b\w+\b"})
        try:
            vectorizer = new_tfidf(vec_params).fit(list(texts))
        except ValueError as err:  # no term in min_df sentences: too little text for the setting
            raise RhetoricError(f"TF-IDF member {member.name}: no term occurs in min_df = {attrs['min_df']} of its "
                                f"{len(texts)} training sentences ({err}); give it more text or set a lower "
                                "min_df in its config block") from err
        features = tfidf_features(member, X, texts, vectorizer, context)
        classifier = LogisticRegression(**params).fit(features[list(pick)], list(y))
        self.cfg["state"] = {"vectorizer": tfidf_to_dict(vectorizer, vec_params),
                             "classifier": logreg_to_dict(classifier, params)}
        self._model = (vectorizer, classifier)

    def predict(self, member, X, texts, context) -> Tuple[numpy.ndarray, List[str]]:
        vectorizer, classifier = self._model
        probs = classifier.predict_proba(tfidf_features(member, X, texts, vectorizer, context))
        return probs, [str(c) for c in classifier.classes_]

    def unfit(self) -> None:
        self._model = None
        self.cfg.pop("state", None)
        self.cfg.pop("labels", None)

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps(self.cfg)

    def from_bytes(self, data: bytes) -> "TfidfShim":
        self.cfg = dict(srsly.msgpack_loads(data))
        state = self.cfg.get("state")
        self._model = (tfidf_from_dict(state["vectorizer"]), logreg_from_dict(state["classifier"])) if state else None
        return self

    def copy(self) -> "TfidfShim":
        copied = TfidfShim()
        return copied.from_bytes(self.to_bytes())


def tfidf_expert(ngram_size: int = 2, min_df: int = 2, neighbour_weight: float = 0.5, C: float = 5.0,
                 class_weight: Optional[str] = "balanced", max_iter: int = 3000, docs: str = "papers",
                 use_sections: bool = True, normalize_digits: bool = False,
                 cues: Optional[AgencyCues] = None) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """A TF-IDF member (module docstring): ``LogisticRegression(C,
    class_weight)`` over the features; ``docs``: "papers" or "others"
    (``members.speaks``); ``use_sections``: the section one-hot is a
    feature; ``normalize_digits``: every digit reads 0 and one-character
    tokens count ("0.0 %" of "2.5 %"), so numbers of a shape share a term
    (``linear_models.digits_to_zero``); ``cues``: whose work each sentence
    speaks of, more columns (``agency.AgencyCues``; its settings recorded in
    ``attrs["cues"]``)."""
    attrs: dict[str, Any] = {"ngram_size": int(ngram_size), "min_df": int(min_df),
                             "neighbour_weight": float(neighbour_weight), "C": float(C),
                             "class_weight": class_weight, "max_iter": int(max_iter),
                             "normalize_digits": bool(normalize_digits),
                             "cues": cues.settings() if cues is not None else None}
    return fitted_member("tfidf_expert", TfidfShim(), attrs, docs=docs, use_sections=use_sections)
