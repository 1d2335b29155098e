"""ml/experts.py: the mixture of a context network and a lexical expert, each
trained on its own loss (FunctionClassifier._loss scores the blocks apart)."""
import numpy
import pytest
import spacy
from spacy.attrs import LOWER
from thinc.api import Model, NumpyOps

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.extensions import HEADING, set_span_values
from spacy_rhetoric.ml.experts import NEXT_TAG, PREV_TAG, _tagged, experts, lexical_features
from spacy_rhetoric.ml.pooling import doc_sentences, make_indices
from spacy_rhetoric.ml.sequence import ngram_counts
from spacy_rhetoric.readers.common import doc_from_sentences


def constant(probs, name):
    """A member that always outputs ``probs`` and records the gradient it gets."""
    def forward(model, X, is_train):
        out = model.ops.asarray2f(numpy.tile(numpy.asarray(probs, dtype="f"), (X[1].lengths.sum(), 1)))

        def backprop(dY):
            model.attrs["dY"] = dY
            return []
        return out, backprop
    return Model(name, forward, dims={"nO": len(probs)}, attrs={})


def batch(nlp, texts):
    docs = [nlp(t) for t in texts]
    return docs, make_indices(NumpyOps(), [doc_sentences(d)[1] for d in docs])


def test_experts_mix_at_prediction_and_stack_in_training():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    a, b = constant([0.8, 0.2], "a"), constant([0.2, 0.8], "b")
    model = experts([a, b], [1.0, 3.0])
    assert model.attrs["weights"] == [0.25, 0.75]
    X = batch(nlp, ["One here. Two here.", "Three."])
    assert numpy.allclose(model.predict(X), [[0.35, 0.65]] * 3)
    Y, backprop = model.begin_update(X)
    assert Y.shape == (3, 4)
    assert numpy.allclose(Y[0], [0.8, 0.2, 0.2, 0.8])
    dY = numpy.arange(12, dtype="f").reshape(3, 4)
    backprop(dY)
    assert numpy.array_equal(a.attrs["dY"], dY[:, :2]) and numpy.array_equal(b.attrs["dY"], dY[:, 2:])
    with pytest.raises(ValueError):
        experts([a, b], [1.0])
    with pytest.raises(ValueError):
        experts([a, b], [0.0, 0.0])


def test_the_loss_of_stacked_blocks_is_the_sum_of_each_blocks_loss():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("rhetoric_function_classifier")
    for label in ("background", "method", "result"):
        pipe.add_label(label)
    pipe.model.get_ref("output_layer").set_dim("nO", 3)
    p1 = numpy.asarray([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]], dtype="f")
    p2 = numpy.asarray([[0.2, 0.3, 0.5], [0.3, 0.3, 0.4]], dtype="f")
    truths = [0, (1, 2)]
    l1, d1 = pipe._loss(p1, truths)
    l2, d2 = pipe._loss(p2, truths)
    loss, d = pipe._loss(numpy.hstack([p1, p2]), truths)
    assert loss == pytest.approx(l1 + l2)
    assert numpy.allclose(d, numpy.hstack([d1, d2]))
    assert l1 != pytest.approx(l2)


def test_lexical_features_tag_neighbours_and_add_section_position_heading():
    nlp = spacy.blank("en")
    doc = doc_from_sentences(nlp, ["we grow films", "films grow fast", "we thank you"],
                             sections=["method", "method", "results"])
    set_span_values(doc, HEADING, list(doc.sents), ["2 Growth", "2 Growth", "3 Film Results"])
    X = ([doc], make_indices(NumpyOps(), [doc_sentences(doc)[1]]))
    layer = lexical_features(ngram_size=1, neighbour_weight=0.5, heading_words=True)
    layer.initialize()
    (keys, vals, lengths), _ = layer(X, is_train=False)
    assert lengths.tolist() and sum(lengths.tolist()) == len(keys) == len(vals)
    rows = numpy.split(numpy.arange(len(keys)), numpy.cumsum(lengths)[:-1])
    ids = doc.to_array([LOWER]).astype("uint64").reshape(-1)
    own0, _ = ngram_counts(NumpyOps(), ids[0:3], 1)
    own1, _ = ngram_counts(NumpyOps(), ids[3:6], 1)
    first, middle = set(keys[rows[0]].tolist()), set(keys[rows[1]].tolist())
    assert set(own0.tolist()) <= first
    # the middle sentence sees its neighbours' words under other keys than its own
    assert set(_tagged(own0, PREV_TAG).tolist()) <= middle
    assert not set(_tagged(own0, PREV_TAG).tolist()) & set(own1.tolist())
    assert set(_tagged(own1, NEXT_TAG).tolist()) <= first
    assert not set(_tagged(own1, PREV_TAG).tolist()) & first  # the first sentence has no previous one
    # the section and the heading's words are features
    from spacy.strings import hash_string
    assert hash_string("__section=method") in first and hash_string("__section=results") in set(keys[rows[2]].tolist())
    assert hash_string("__heading=growth") in first and hash_string("__heading=film") in set(keys[rows[2]].tolist())
    # each group is L2-normalised: the sentence's own words weigh 1, each neighbour 0.5
    own_vals = vals[rows[1]][: len(own1)]
    assert numpy.sqrt((own_vals ** 2).sum()) == pytest.approx(1.0)
    without = lexical_features(ngram_size=1, neighbour_weight=0.0)
    (keys0, _, lengths0), _ = without(X, is_train=False)
    assert lengths0[1] < lengths[1]


def test_a_papers_only_member_learns_from_and_speaks_on_full_papers_only():
    from spacy_rhetoric.ml.segments import is_paper, paper_rows

    assert is_paper(["abstract", "introduction"]) and is_paper(["abstract", "unknown"])
    assert not is_paper(["abstract", "abstract"]) and not is_paper(["unknown"]) and not is_paper([])
    nlp = spacy.blank("en")
    paper = doc_from_sentences(nlp, ["We grow films.", "Films grow."], sections=["abstract", "method"])
    plain = doc_from_sentences(nlp, ["Plain text here.", "More of it."])
    X = ([paper, plain], make_indices(NumpyOps(), [doc_sentences(d)[1] for d in (paper, plain)]))
    assert paper_rows(X).tolist() == [1.0, 1.0, 0.0, 0.0]
    a, b = constant([0.8, 0.2], "a"), constant([0.2, 0.8], "b")
    model = experts([a, b], [0.5, 0.5], papers_only=[False, True])
    assert numpy.allclose(model.predict(X), [[0.5, 0.5], [0.5, 0.5], [0.8, 0.2], [0.8, 0.2]])
    _, backprop = model.begin_update(X)
    backprop(numpy.ones((4, 4), dtype="f"))
    assert numpy.array_equal(a.attrs["dY"], numpy.ones((4, 2), dtype="f"))
    assert b.attrs["dY"].tolist() == [[1, 1], [1, 1], [0, 0], [0, 0]]


def test_one_class_weight_power_per_block():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("rhetoric_function_classifier", config={"class_weight_power": [0.0, 1.0]})
    for label in ("background", "method", "result"):
        pipe.add_label(label)
    pipe.cfg["class_weights"] = [[1.0, 1.0, 1.0], [0.5, 1.0, 4.0]]
    p = numpy.asarray([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]], dtype="f")
    truths = [0, 2]
    plain, d_plain = pipe._loss(p, truths)
    loss, d = pipe._loss(numpy.hstack([p, p]), truths)
    weighted = (0.5 * -numpy.log(0.7) + 4.0 * -numpy.log(0.8)) / 2
    assert loss == pytest.approx(plain + weighted, rel=1e-5)
    assert numpy.allclose(d[:, :3], d_plain) and not numpy.allclose(d[:, 3:], d_plain)
    with pytest.raises(ValueError):
        nlp.add_pipe("rhetoric_function_classifier", name="bad", config={"class_weight_power": [0.5, 2.0]})


def test_silent_sections_mute_a_papers_only_member_at_prediction_only():
    nlp = spacy.blank("en")
    paper = doc_from_sentences(nlp, ["We grow films.", "Films grow."], sections=["abstract", "method"])
    X = ([paper], make_indices(NumpyOps(), [doc_sentences(paper)[1]]))
    a, b = constant([0.8, 0.2], "a"), constant([0.2, 0.8], "b")
    model = experts([a, b], [0.5, 0.5], papers_only=[False, True], silent_sections=["abstract"])
    assert numpy.allclose(model.predict(X), [[0.8, 0.2], [0.5, 0.5]])
    _, backprop = model.begin_update(X)
    backprop(numpy.ones((2, 4), dtype="f"))
    assert b.attrs["dY"].tolist() == [[1, 1], [1, 1]]  # it still learns from the abstract


def test_a_row_no_member_speaks_on_falls_back_to_the_others():
    nlp = spacy.blank("en")
    paper = doc_from_sentences(nlp, ["We grow films.", "Films grow."], sections=["abstract", "method"])
    plain = doc_from_sentences(nlp, ["Plain text here."])
    X = ([paper, plain], make_indices(NumpyOps(), [doc_sentences(d)[1] for d in (paper, plain)]))
    a, b = constant([0.8, 0.2], "a"), constant([0.2, 0.8], "b")
    model = experts([a, b], [0.0, 1.0], papers_only=[False, True], silent_sections=["abstract"])
    out = model.predict(X)
    assert not numpy.isnan(out).any()
    assert numpy.allclose(out, [[0.8, 0.2], [0.2, 0.8], [0.8, 0.2]])


def test_lexical_section_dropout_hides_the_section_in_training_only():
    from spacy.strings import hash_string

    from spacy_rhetoric.ml.sequence import _position_keys

    nlp = spacy.blank("en")
    doc = doc_from_sentences(nlp, ["we grow films", "films grow fast"], sections=["method", "method"])
    X = ([doc], make_indices(NumpyOps(), [doc_sentences(doc)[1]]))
    layer = lexical_features(ngram_size=1, section_dropout=1.0)
    section = hash_string("__section=method")
    tagged = {k for keys in _position_keys(2, "method") for k in keys}
    plain = {k for keys in _position_keys(2, "") for k in keys}
    (keys, _, _), _ = layer(X, is_train=True)
    assert section not in set(keys.tolist()) and not tagged & set(keys.tolist()) and plain <= set(keys.tolist())
    (keys, _, _), _ = layer(X, is_train=False)
    assert section in set(keys.tolist()) and tagged <= set(keys.tolist())


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
