"""ml/experts.py: the full-paper mixture of one network trained by gradient
and members fitted at initialize, averaged at prediction where each speaks."""
import numpy
import pytest
import spacy
from thinc.api import Model, NumpyOps

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.ml.experts import experts
from spacy_rhetoric.ml.pooling import doc_sentences, make_indices
from spacy_rhetoric.readers.common import doc_from_sentences


def constant(probs, name, **attrs):
    """A member that always outputs ``probs`` and records the gradient it gets."""
    def forward(model, X, is_train):
        out = model.ops.asarray2f(numpy.tile(numpy.asarray(probs, dtype="f"), (X[1].lengths.sum(), 1)))

        def backprop(dY):
            model.attrs["dY"] = dY
            return []
        return out, backprop
    return Model(name, forward, dims={"nO": len(probs)}, attrs=dict(attrs))


def fitted(probs, name, docs="papers", silent_sections=()):
    """A fitted member (ml/fitted.py's marker and scope attrs) that outputs ``probs``."""
    from spacy_rhetoric.ml.fitted import FITTED

    return constant(probs, name, **{FITTED: True, "docs": docs, "state": {"fitted": True},
                                    "silent_sections": list(silent_sections), "paper_sections": []})


def batch(nlp, texts):
    docs = [nlp(t) for t in texts]
    return docs, make_indices(NumpyOps(), [doc_sentences(d)[1] for d in docs])


def test_the_network_alone_trains_and_the_fitted_members_join_it_where_they_speak():
    nlp = spacy.blank("en")
    paper = doc_from_sentences(nlp, ["We grow films.", "Films grow."], sections=["abstract", "method"])
    plain = doc_from_sentences(nlp, ["Plain text here."])
    X = ([paper, plain], make_indices(NumpyOps(), [doc_sentences(d)[1] for d in (paper, plain)]))
    network = constant([0.8, 0.2], "network")
    papers = fitted([0.2, 0.8], "papers", silent_sections=["abstract"])
    model = experts([network, papers], [1.0, 3.0])
    assert model.attrs["weights"] == [0.25, 0.75]
    # prediction: the paper member speaks on the paper's body only; the abstract and plain text are the network's
    assert numpy.allclose(model.predict(X), [[0.8, 0.2], [0.35, 0.65], [0.8, 0.2]])
    # training: the network's rows, its gradient untouched; the fitted member is not run
    Y, backprop = model.begin_update(X)
    assert numpy.allclose(Y, [[0.8, 0.2]] * 3)
    dY = numpy.arange(6, dtype="f").reshape(3, 2)
    backprop(dY)
    assert numpy.array_equal(network.attrs["dY"], dY) and "dY" not in papers.attrs


def test_a_mixture_has_exactly_one_member_trained_by_gradient_and_valid_weights():
    a, b = constant([0.8, 0.2], "a"), constant([0.2, 0.8], "b")
    with pytest.raises(ValueError, match="exactly one member"):
        experts([a, b], [0.5, 0.5])
    with pytest.raises(ValueError, match="exactly one member"):
        experts([fitted([0.5, 0.5], "f")], [1.0])
    with pytest.raises(ValueError):
        experts([a, fitted([0.5, 0.5], "f")], [1.0])
    with pytest.raises(ValueError):
        experts([a, fitted([0.5, 0.5], "f")], [0.0, 0.0])


def test_a_row_no_fitted_member_speaks_on_is_the_networks():
    nlp = spacy.blank("en")
    paper = doc_from_sentences(nlp, ["We grow films.", "Films grow."], sections=["abstract", "method"])
    X = ([paper], make_indices(NumpyOps(), [doc_sentences(paper)[1]]))
    model = experts([constant([0.8, 0.2], "a"), fitted([0.2, 0.8], "b", silent_sections=["abstract"])], [0.0, 1.0])
    out = model.predict(X)
    assert not numpy.isnan(out).any()
    assert numpy.allclose(out, [[0.8, 0.2], [0.2, 0.8]])


def test_a_list_of_class_weight_powers_is_refused():
    nlp = spacy.blank("en")
    with pytest.raises(Exception):
        nlp.add_pipe("rhetoric_function_classifier", config={"class_weight_power": [0.0, 1.0]})


def test_a_fitted_member_weighed_zero_is_not_run_at_prediction():
    from spacy_rhetoric.ml.fitted import FITTED

    def boom(model, X, is_train):
        raise AssertionError("a member weighed 0 was run")

    nlp = spacy.blank("en")
    paper = doc_from_sentences(nlp, ["We grow films.", "Films grow."], sections=["method", "results"])
    X = ([paper], make_indices(NumpyOps(), [doc_sentences(paper)[1]]))
    fitted = Model("fitted", boom, attrs={FITTED: True, "docs": "papers"})
    model = experts([constant([0.8, 0.2], "a"), fitted], [1.0, 0.0], nO=2)
    assert numpy.allclose(model.predict(X), [[0.8, 0.2]] * 2)
    with pytest.raises(AssertionError):
        experts([constant([0.8, 0.2], "a"), fitted], [0.5, 0.5], nO=2).predict(X)
