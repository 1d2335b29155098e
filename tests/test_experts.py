"""ml/experts.py: the full-paper mixture -- one network trained by gradient
and members fitted by the member-fitting step, each a config block, mixed with the weights
each scope states."""
import numpy
import pytest
import spacy
from thinc.api import Model, NumpyOps

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.ml.experts import SCOPES, experts, mixture_weights, scope_rows
from spacy_rhetoric.ml.members import MemberShim, fitted_member
from spacy_rhetoric.ml.pooling import doc_sentences, make_indices
from spacy_rhetoric.readers.common import doc_from_sentences


def constant(probs, name, **attrs):
    """A member that always outputs ``probs`` and records the gradient it gets."""
    def forward(model, X, is_train):
        model.attrs["runs"] = model.attrs.get("runs", 0) + 1
        out = model.ops.asarray2f(numpy.tile(numpy.asarray(probs, dtype="f"), (X[1].lengths.sum(), 1)))

        def backprop(dY):
            model.attrs["dY"] = dY
            return []
        return out, backprop
    return Model(name, forward, dims={"nO": len(probs)}, attrs=dict(attrs))


class ConstantShim(MemberShim):
    """A fitted member's shim that predicts ``probs`` and counts its runs."""

    def __init__(self, probs):
        super().__init__(model=True, config={"labels": ["a", "b"]})
        self.probs, self.runs = probs, 0

    def predict(self, member, X, texts, context):
        self.runs += 1
        return numpy.tile(numpy.asarray(self.probs, dtype="f"), (len(texts), 1)), ["a", "b"]


def fitted(probs, name, docs="papers"):
    """A fitted member (ml/members.py) that outputs ``probs`` where it speaks."""
    return fitted_member(name, ConstantShim(probs), {}, docs=docs)


def as_X(docs):
    return docs, make_indices(NumpyOps(), [doc_sentences(d)[1] for d in docs])


def paper_and_plain():
    nlp = spacy.blank("en")
    paper = doc_from_sentences(nlp, ["We grow films.", "Films grow."], sections=["abstract", "method"])
    plain = doc_from_sentences(nlp, ["Plain text here."])
    return as_X([paper, plain])


def test_scopes_of_the_rows():
    rows = scope_rows(paper_and_plain())
    assert {s: r.tolist() for s, r in rows.items()} == {
        "paper_body": [0, 1, 0], "paper_abstract": [1, 0, 0], "other_docs": [0, 0, 1]}


def test_each_scope_mixes_with_its_own_weights_and_training_is_the_network_alone():
    X = paper_and_plain()
    network = constant([0.8, 0.2], "network")
    papers = fitted([0.2, 0.8], "papers")
    abstracts = fitted([0.5, 0.5], "abstracts", docs="others")
    weights = {"paper_body": {"network": 0.25, "papers": 0.75},
               "paper_abstract": {"network": 0.5, "papers": 0.25, "abstracts": 0.25},
               "other_docs": {"network": 0.4, "abstracts": 0.6}}
    model = experts(network, {"papers": papers, "abstracts": abstracts}, weights)
    assert mixture_weights(model) == weights
    out = model.predict(X)
    assert numpy.allclose(out[0], [0.5 * 0.8 + 0.25 * 0.2 + 0.25 * 0.5, 0.5 * 0.2 + 0.25 * 0.8 + 0.25 * 0.5])
    assert numpy.allclose(out[1], [0.25 * 0.8 + 0.75 * 0.2, 0.25 * 0.2 + 0.75 * 0.8])
    assert numpy.allclose(out[2], [0.4 * 0.8 + 0.6 * 0.5, 0.4 * 0.2 + 0.6 * 0.5])
    # each member computes only the rows it is weighed on: derived from the weights, recorded on the mixture
    # (the members' own settings are as their blocks built them)
    assert model.attrs["sections"] == {"papers": {"silent_sections": [], "paper_sections": []},
                                       "abstracts": {"silent_sections": [], "paper_sections": ["abstract"]}}
    assert "silent_sections" not in papers.attrs and "paper_sections" not in abstracts.attrs
    # training: the network's rows, its gradient untouched; the fitted members are not run
    runs = papers.shims[0].runs
    Y, backprop = model.begin_update(X)
    assert numpy.allclose(Y, [[0.8, 0.2]] * 3)
    dY = numpy.arange(6, dtype="f").reshape(3, 2)
    backprop(dY)
    assert numpy.array_equal(network.attrs["dY"], dY) and papers.shims[0].runs == runs


def test_an_unfitted_member_gives_its_weight_to_the_network_and_a_member_weighed_zero_is_not_run():
    X = paper_and_plain()
    network, papers = constant([0.8, 0.2], "network"), fitted([0.2, 0.8], "papers")
    papers.shims[0].unfit()
    model = experts(network, {"papers": papers}, {"paper_body": {"network": 0.5, "papers": 0.5}})
    assert numpy.allclose(model.predict(X), [[0.8, 0.2]] * 3)
    idle = fitted([0.2, 0.8], "idle")
    model = experts(constant([0.8, 0.2], "network"), {"idle": idle}, {"paper_body": {"network": 1.0}})
    model.predict(X)
    assert idle.shims[0].runs == 0
    assert model.attrs["sections"]["idle"]["silent_sections"] == ["abstract"]


def test_priors_move_the_decision_in_their_scopes_only_and_training_is_untouched():
    X = paper_and_plain()
    weights = {"paper_body": {"network": 1.0}, "paper_abstract": {"network": 1.0}, "other_docs": {"network": 1.0}}
    model = experts(constant([0.6, 0.4], "network"), {}, weights, priors={"paper_body": {"b": 2.0}})
    model.attrs["labels"] = ["a", "b"]  # as the pipe names them when it is initialized
    out = model.predict(X)
    # the body row: 0.6 / 0.8 -> normalised 0.6 / 1.4, 0.8 / 1.4; the abstract and the plain text as mixed
    assert numpy.allclose(out, [[0.6, 0.4], [0.6 / 1.4, 0.8 / 1.4], [0.6, 0.4]])
    assert model.attrs["priors"] == {"paper_body": {"b": 2.0}}
    Y, _ = model.begin_update(X)
    assert numpy.allclose(Y, [[0.6, 0.4]] * 3)
    # a label the classifier does not have: a warning, the rows as mixed (the default config on other labels);
    # no label names at all: an error
    model.attrs["labels"] = ["a", "c"]
    with pytest.warns(UserWarning, match="no labels of this classifier"):
        assert numpy.allclose(model.predict(X), [[0.6, 0.4]] * 3)
    model.attrs["labels"] = []
    with pytest.raises(ValueError, match="label names"):
        model.predict(X)
    with pytest.raises(ValueError, match="scopes"):
        experts(constant([0.6, 0.4], "network"), {}, weights, priors={"body": {"b": 2.0}})
    with pytest.raises(ValueError, match="> 0"):
        experts(constant([0.6, 0.4], "network"), {}, weights, priors={"paper_body": {"b": 0.0}})


def test_bad_mixtures_are_errors():
    network = constant([0.8, 0.2], "network")
    with pytest.raises(ValueError, match="trained by gradient"):
        experts(fitted([0.5, 0.5], "f"), {}, {"paper_body": {"network": 1.0}})
    with pytest.raises(ValueError, match="fitted members"):
        experts(network, {"b": constant([0.2, 0.8], "b")}, {"paper_body": {"network": 1.0}})
    with pytest.raises(ValueError, match="sum to 1"):
        experts(network, {"p": fitted([0.5, 0.5], "p")}, {"paper_body": {"network": 0.5, "p": 0.4}})
    with pytest.raises(ValueError, match="no member"):
        experts(network, {}, {"paper_body": {"network": 0.5, "ghost": 0.5}})
    with pytest.raises(ValueError, match="scopes"):
        experts(network, {}, {"body": {"network": 1.0}})
    with pytest.raises(ValueError, match="cannot speak"):  # a papers member on abstracts and plain text
        experts(network, {"p": fitted([0.5, 0.5], "p")}, {"other_docs": {"network": 0.5, "p": 0.5}})
    with pytest.raises(ValueError, match="cannot speak"):  # the abstracts' member on a paper's body
        experts(network, {"a": fitted([0.5, 0.5], "a", docs="others")}, {"paper_body": {"network": 0.5, "a": 0.5}})


def test_a_list_of_class_weight_powers_is_refused():
    nlp = spacy.blank("en")
    with pytest.raises(Exception):
        nlp.add_pipe("rhetoric_function_classifier", config={"class_weight_power": [0.0, 1.0]})


def test_the_shipped_configs_weights_are_the_weights_that_run():
    """Every shipped config with a mixture: the per-scope tables of the built
    model are the config's, and each sums to 1."""
    from spacy_rhetoric.resources import config_names, config_path

    seen = 0
    for name in config_names():
        config = spacy.util.load_config(config_path(name))
        for pipe_name, pipe in config["components"].items():
            model = pipe.get("model", {})
            if "weights" not in model:
                continue
            seen += 1
            blank = spacy.blank("en")
            block = spacy.util.load_config(config_path(name), interpolate=True)["components"][pipe_name]["model"]
            block["network"]["tok2vec"] = {"@architectures": "spacy.HashEmbedCNN.v2", "pretrained_vectors": None,
                                           "width": 16, "depth": 1, "embed_size": 100, "window_size": 1,
                                           "maxout_pieces": 2, "subword_features": False}
            built = blank.add_pipe("rhetoric_function_classifier", config={"model": block}).model
            runs = mixture_weights(built)
            assert runs == {s: {k: float(v) for k, v in model["weights"][s].items()} for s in SCOPES}, name
            assert all(sum(t.values()) == pytest.approx(1.0, abs=1e-3) for t in runs.values())
    assert seen >= 1
