"""scikit-learn TF-IDF vectorizers and logistic regressions as plain data.

The one place that turns a fitted ``TfidfVectorizer`` and
``LogisticRegression`` into JSON/msgpack-able values and back (no pickle: a
saved pipeline is a file a user can hand us). Used by the section tagger's
heading classifier (``section_headings.HeadingClassifier``) and by the
closed-form members of the full-paper classifier (``ml/tfidf_member.py``).

Only what prediction needs is kept: the vectorizer's options, vocabulary (in
column order) and idf; the classifier's classes, coefficients and
intercepts. Options that only matter while fitting (``min_df``, ``max_df``,
``max_features``) are dropped when rebuilding, since the vocabulary is fixed.
"""
import re
from typing import Any, Dict, Optional

import numpy

from .errors import RhetoricError

FIT_ONLY = ("min_df", "max_df", "max_features")
_DIGIT = re.compile(r"\d")


def digits_to_zero(text: str) -> str:
    """Lower-case ``text`` with every digit written 0 ("45.2 %" -> "00.0 %"),
    so that numbers of one shape share a TF-IDF term."""
    return _DIGIT.sub("0", text.lower())


def _sklearn_options(params: Dict[str, Any]) -> Dict[str, Any]:
    """``TfidfVectorizer`` keyword arguments of our stored ``params``: the
    JSON forms made Python again (``ngram_range`` a tuple;
    ``normalize_digits: true`` -> ``preprocessor=digits_to_zero``)."""
    out = {k: v for k, v in params.items() if k != "normalize_digits"}
    if "ngram_range" in out:
        out["ngram_range"] = tuple(out["ngram_range"])
    if params.get("normalize_digits"):
        out["preprocessor"] = digits_to_zero
    return out


def _vectorizer_options(params: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in _sklearn_options(params).items() if k not in FIT_ONLY}


def new_tfidf(params: Dict[str, Any]):
    """An unfitted ``TfidfVectorizer`` with ``params``: its own keyword
    arguments in their JSON form (``ngram_range`` may be a list) and
    ``normalize_digits`` (``digits_to_zero`` as the preprocessor)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(**_sklearn_options(params))


def tfidf_to_dict(vectorizer, params: Dict[str, Any], decimals: Optional[int] = None) -> Dict[str, Any]:
    """``{"params", "vocabulary", "idf"}`` of a fitted ``TfidfVectorizer``
    (``decimals``: round the idf, so that a model rebuilt from the rounded
    values is the one that was kept)."""
    idf = numpy.asarray(vectorizer.idf_, dtype="float64")
    if decimals is not None:
        idf = numpy.round(idf, decimals)
    return {"params": dict(params), "vocabulary": sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get),
            "idf": idf.tolist()}


def tfidf_from_dict(data: Dict[str, Any]):
    """The ``TfidfVectorizer`` of ``tfidf_to_dict`` (fixed vocabulary)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vocabulary = list(data["vocabulary"])
    idf = numpy.asarray(data["idf"], dtype="float64")
    if len(idf) != len(vocabulary):
        raise RhetoricError(f"TF-IDF model: {len(idf)} idf values for a vocabulary of {len(vocabulary)}")
    vectorizer = TfidfVectorizer(**_vectorizer_options(data.get("params", {})), vocabulary=vocabulary)
    vectorizer.idf_ = idf
    return vectorizer


def logreg_to_dict(classifier, params: Dict[str, Any], decimals: Optional[int] = None) -> Dict[str, Any]:
    """``{"params", "classes", "coef", "intercept"}`` of a fitted
    ``LogisticRegression``."""
    coef = numpy.asarray(classifier.coef_, dtype="float64")
    intercept = numpy.asarray(classifier.intercept_, dtype="float64")
    if decimals is not None:
        coef, intercept = numpy.round(coef, decimals), numpy.round(intercept, decimals)
    return {"params": dict(params), "classes": [str(c) for c in classifier.classes_], "coef": coef.tolist(),
            "intercept": intercept.tolist()}


def logreg_from_dict(data: Dict[str, Any], n_features: Optional[int] = None):
    """The ``LogisticRegression`` of ``logreg_to_dict`` (``n_features``:
    check the coefficients' width)."""
    from sklearn.linear_model import LogisticRegression

    classifier = LogisticRegression(**dict(data.get("params", {})))
    classifier.classes_ = numpy.asarray(data["classes"], dtype=object)
    classifier.coef_ = numpy.asarray(data["coef"], dtype="float64")
    classifier.intercept_ = numpy.asarray(data["intercept"], dtype="float64")
    rows = 1 if len(classifier.classes_) == 2 else len(classifier.classes_)  # sklearn's binary case: one row
    if classifier.coef_.ndim != 2 or classifier.coef_.shape[0] != rows or (
            n_features is not None and classifier.coef_.shape[1] != n_features):
        raise RhetoricError(f"linear model: coef shape {classifier.coef_.shape} does not match "
                            f"{len(classifier.classes_)} classes x {n_features} features")
    return classifier
