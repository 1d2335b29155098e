"""ml/members.py and ml/tfidf_member.py: the members of the full-paper
classifier's mixture fitted at initialize (TF-IDF logistic regressions by
scikit-learn, stored as plain data in their shim); and linear_models.py, the
one place that stores scikit-learn linear models."""
import json

import numpy
import pytest
import spacy
from device_sim import device_ops, host, is_device_array
from helpers import PAPER, as_X, paper_doc
from helpers import PAPER_LABELS as LABELS
from thinc.api import Model, NumpyOps, set_current_ops

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.errors import RhetoricError
from spacy_rhetoric.linear_models import logreg_from_dict, logreg_to_dict, new_tfidf, tfidf_from_dict, tfidf_to_dict
from spacy_rhetoric.ml.experts import experts
from spacy_rhetoric.ml.members import (
    N_CONTEXT,
    context_matrix,
    fit_members,
    fitted_members,
    heading_runs,
    is_fitted,
    neighbour_rows,
    sentence_texts,
)
from spacy_rhetoric.ml.pooling import doc_sentences, make_indices
from spacy_rhetoric.ml.tfidf_member import tfidf_expert
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.section_headings import SENTENCE_SECTIONS


def constant(probs, name="network"):
    def forward(model, X, is_train):
        n = int(X[1].lengths.sum())
        return model.ops.asarray2f(numpy.tile(numpy.asarray(probs, dtype="f"), (n, 1))), lambda dY: []
    return Model(name, forward, dims={"nO": len(probs)})


def fitted(nlp, **kwargs):
    member = tfidf_expert(min_df=1, C=50.0, **kwargs)
    docs = [paper_doc(nlp, PAPER), paper_doc(nlp, PAPER)]  # the same text twice: used once
    counts = fit_members([member], as_X(docs), [r[3] for r in PAPER] * 2, LABELS)
    assert counts == {"tfidf_expert": {"docs": 1, "sentences": len(PAPER), "labelled": len(PAPER)}}
    return member


def test_linear_models_round_trip_through_json():
    from sklearn.linear_model import LogisticRegression

    texts = ["we train a parser", "accuracy rises", "parsing is old", "we tune a parser", "recall rises"]
    y = ["method", "result", "background", "method", "result"]
    params = {"ngram_range": [1, 2], "min_df": 1, "sublinear_tf": True}
    vec = new_tfidf(params).fit(texts)
    clf = LogisticRegression(C=10.0).fit(vec.transform(texts), y)
    data = json.loads(json.dumps({"v": tfidf_to_dict(vec, params), "c": logreg_to_dict(clf, {"C": 10.0})}))
    vec2 = tfidf_from_dict(data["v"])
    clf2 = logreg_from_dict(data["c"], n_features=len(vec2.vocabulary))
    new = ["we train recall", "unseen words only"]
    assert (vec2.transform(new) != vec.transform(new)).nnz == 0
    assert numpy.allclose(clf2.predict_proba(vec2.transform(new)), clf.predict_proba(vec.transform(new)))
    with pytest.raises(ValueError):
        logreg_from_dict(data["c"], n_features=3)
    with pytest.raises(ValueError):
        tfidf_from_dict(dict(data["v"], idf=data["v"]["idf"][:-1]))


def test_features_neighbours_positions_and_sections():
    nlp = spacy.blank("en")
    doc = paper_doc(nlp, PAPER, labels=False)
    plain = doc_from_sentences(nlp, ["Plain text.", "More text.", "The end."])
    X = as_X([doc, plain])
    assert sentence_texts(X)[:2] == ["Parsing is an old task.", "Many parsers exist."]
    prev, nxt = neighbour_rows([6, 3])
    assert prev.tolist() == [-1, 0, 1, 2, 3, 4, -1, 6, 7] and nxt.tolist() == [1, 2, 3, 4, 5, -1, 7, 8, -1]
    assert heading_runs(X) == [2, 2, 2, 3]
    M = context_matrix(X)
    assert M.shape == (9, N_CONTEXT) and numpy.allclose(M.sum(axis=1), 4.0)  # section, 2 positions, index
    section = {name: i for i, name in enumerate(SENTENCE_SECTIONS)}
    base = len(SENTENCE_SECTIONS)
    assert M[0, section["introduction"]] == M[2, section["method"]] == M[6, section["unknown"]] == 1.0
    # index in the run under one heading: 0 for the first sentence under each heading
    assert M[0, base + 20] == M[2, base + 20] == M[3, base + 21] == 1.0
    # relative position in the doc: the last of six sentences is in bucket 8 of 10
    assert M[0, base + 10] == M[5, base + 18] == 1.0


def test_a_fitted_member_learns_from_papers_and_is_silent_elsewhere():
    nlp = spacy.blank("en")
    member = fitted(nlp)
    shim = member.shims[0]
    assert shim.cfg["labels"] == LABELS and shim.cfg["state"]["vectorizer"]["vocabulary"]
    probs = member.predict(as_X([paper_doc(nlp, PAPER, labels=False)]))
    assert [LABELS[i] for i in probs.argmax(axis=1)] == [r[3] for r in PAPER]
    assert numpy.allclose(probs.sum(axis=1), 1.0)
    plain = member.predict(as_X([doc_from_sentences(nlp, ["We train a graph parser.", "Recall rises too."])]))
    assert numpy.allclose(plain, 1.0 / 3)  # not a paper: a uniform row, weighed 0 by experts


def test_experts_leave_fitted_members_out_of_training_and_mute_unfitted_ones():
    nlp = spacy.blank("en")
    member = fitted(nlp)
    network = constant([0.2, 0.3, 0.5])
    mixture = experts(network, {"tfidf": member}, {"paper_body": {"network": 0.5, "tfidf": 0.5}}, nO=3)
    paper = as_X([paper_doc(nlp, PAPER, labels=False)])
    Y, backprop = mixture.begin_update(paper)
    assert Y.shape == (len(PAPER), 3)  # the network's block only: the fitted member has no loss
    backprop(numpy.ones_like(Y))
    mixed = mixture.predict(paper)
    assert numpy.allclose(mixed, 0.5 * numpy.asarray([0.2, 0.3, 0.5]) + 0.5 * member.predict(paper))
    plain = as_X([doc_from_sentences(nlp, ["We train a graph parser.", "Recall rises too."])])
    assert numpy.allclose(mixture.predict(plain), [[0.2, 0.3, 0.5]] * 2)
    unfitted = tfidf_expert()
    assert not is_fitted(unfitted)
    alone = experts(constant([0.2, 0.3, 0.5]), {"tfidf": unfitted}, {"paper_body": {"network": 0.1, "tfidf": 0.9}},
                    nO=3)
    alone.initialize(X=paper)
    assert numpy.allclose(alone.predict(paper), [[0.2, 0.3, 0.5]] * len(PAPER))
    assert fitted_members(mixture) == [member]


def test_a_member_of_the_other_docs_learns_from_and_speaks_on_abstracts_and_plain_text():
    nlp = spacy.blank("en")
    others = tfidf_expert(min_df=1, C=50.0, docs="others", use_sections=False)
    papers = tfidf_expert(min_df=1, C=50.0)
    abstract = doc_from_sentences(nlp, ["Parsers matter.", "We train a graph parser.", "Accuracy rises."],
                                  sections=["abstract"] * 3, labels=["background", "method", "result"])
    paper = paper_doc(nlp, PAPER)
    counts = fit_members([papers, others], as_X([abstract, paper]),
                         ["background", "method", "result"] + [r[3] for r in PAPER], LABELS)
    assert counts["tfidf_expert"] == {"docs": 1, "sentences": len(PAPER), "labelled": len(PAPER)}
    assert counts["tfidf_expert_others"] == {"docs": 1, "sentences": 3, "labelled": 3}
    assert len(others.shims[0].cfg["state"]["vectorizer"]["vocabulary"]) < \
        len(papers.shims[0].cfg["state"]["vectorizer"]["vocabulary"])
    plain = doc_from_sentences(nlp, ["Parsers matter.", "We train a graph parser.", "Accuracy rises."])
    X = as_X([paper_doc(nlp, PAPER, labels=False), plain])
    out = others.predict(X)
    assert numpy.allclose(out[: len(PAPER)], 1.0 / 3)  # silent on the paper
    assert [LABELS[i] for i in out[len(PAPER):].argmax(axis=1)] == ["background", "method", "result"]
    # no section feature: the same abstract under "Abstract" or as plain text gets the same row
    assert numpy.allclose(others.predict(as_X([abstract])), out[len(PAPER):])
    network = constant([0.2, 0.3, 0.5])
    mixture = experts(network, {"papers": papers, "others": others},
                      {"paper_body": {"network": 0.5, "papers": 0.5}, "other_docs": {"network": 0.25, "others": 0.75}},
                      nO=3)
    mixed = mixture.predict(X)
    assert numpy.allclose(mixed[len(PAPER):], 0.25 * numpy.asarray([0.2, 0.3, 0.5]) + 0.75 * out[len(PAPER):])
    assert numpy.allclose(mixed[: len(PAPER)], 0.5 * numpy.asarray([0.2, 0.3, 0.5]) + 0.5 * papers.predict(X)[: len(PAPER)])


def test_a_refit_member_predicts_with_its_new_state():
    nlp = spacy.blank("en")
    member = fitted(nlp)
    X = as_X([paper_doc(nlp, PAPER, labels=False)])
    before = member.predict(X)
    flipped = {"background": "result", "method": "background", "result": "method"}
    for _ in range(3):  # each fit replaces what the member predicts with
        fit_members([member], as_X([paper_doc(nlp, PAPER)]), [flipped[r[3]] for r in PAPER], LABELS)
        after = member.predict(X)
        assert [LABELS[i] for i in after.argmax(axis=1)] == [flipped[r[3]] for r in PAPER]
        fit_members([member], as_X([paper_doc(nlp, PAPER)]), [r[3] for r in PAPER], LABELS)
        assert numpy.allclose(member.predict(X), before)


def test_fewer_than_two_labels_leave_the_member_unfitted():
    nlp = spacy.blank("en")
    member = tfidf_expert(min_df=1)
    fit_members([member], as_X([paper_doc(nlp, PAPER)]), ["method"] * len(PAPER), LABELS)
    assert not is_fitted(member)
    fit_members([member], as_X([doc_from_sentences(nlp, ["A b c.", "D e f."])]), ["method", "result"], LABELS)
    assert not is_fitted(member)  # plain text is no paper


def test_the_fitted_state_is_saved_with_the_model():
    nlp = spacy.blank("en")
    member = fitted(nlp)
    X = as_X([paper_doc(nlp, PAPER, labels=False)])
    again = tfidf_expert(min_df=1, C=50.0)
    again.initialize()
    again.from_bytes(member.to_bytes())
    assert numpy.allclose(again.predict(X), member.predict(X))


def test_a_fitted_member_hands_device_arrays_to_a_device_model():
    nlp = spacy.blank("en")
    set_current_ops(NumpyOps())
    member = fitted(nlp)
    X = as_X([paper_doc(nlp, PAPER, labels=False)])
    cpu = member.predict(X)
    with device_ops() as ops:
        on_device = tfidf_expert(min_df=1, C=50.0)
        on_device.from_bytes(member.to_bytes())
        X_device = ([d for d in X[0]], make_indices(ops, [doc_sentences(d)[1] for d in X[0]]))
        out = on_device.predict(X_device)
        assert is_device_array(out)
        assert numpy.allclose(host(out), cpu)


def test_a_member_of_the_other_docs_may_speak_on_a_papers_abstract_too():
    from spacy_rhetoric.ml.members import predict_member, speaks

    nlp = spacy.blank("en")
    others = tfidf_expert(min_df=1, C=50.0, docs="others", use_sections=False)
    also = {"paper_sections": ["abstract"]}  # as the mixture derives it from [model.weights.paper_abstract]
    abstract = doc_from_sentences(nlp, ["Parsers matter.", "We train a graph parser.", "Accuracy rises."],
                                  sections=["abstract"] * 3, labels=["background", "method", "result"])
    rows = [("We train a parser here.", "abstract", "Abstract", "method")] + PAPER
    paper = paper_doc(nlp, rows)
    X = as_X([abstract, paper])
    # it learns from the abstract only (the paper's abstract is no training data of it) ...
    counts = fit_members([others], X, ["background", "method", "result"] + [r[3] for r in rows], LABELS)
    assert counts["tfidf_expert_others"] == {"docs": 1, "sentences": 3, "labelled": 3}
    assert speaks(others, X).tolist() == [1.0] * 3 + [0.0] * len(rows)
    # ... and speaks on abstracts, plain text and the abstract of a paper
    assert speaks(others, X, **also).tolist() == [1.0] * 3 + [1.0] + [0.0] * len(PAPER)
    out = predict_member(others, as_X([paper_doc(nlp, rows, labels=False)]), **also)
    assert not numpy.allclose(out[0], 1.0 / 3) and numpy.allclose(out[1:], 1.0 / 3)


def test_a_member_of_all_docs_learns_from_papers_and_abstracts_and_speaks_on_both():
    """``spacy_rhetoric.all_docs.v1``: the member learns from every doc and speaks everywhere,
    less the paper sections the mixture silences; the weights may name it in every scope."""
    from spacy_rhetoric.ml.experts import all_docs_scope, experts
    from spacy_rhetoric.ml.members import speaks

    assert all_docs_scope().name == "all"
    nlp = spacy.blank("en")
    member = tfidf_expert(min_df=1, C=50.0, docs="all", use_sections=False)
    assert member.name == "tfidf_expert" and member.attrs["docs"] == "all"
    abstract = doc_from_sentences(nlp, ["Parsers matter.", "We train a graph parser.", "Accuracy rises."],
                                  sections=["abstract"] * 3, labels=["background", "method", "result"])
    rows = [("We train a parser here.", "abstract", "Abstract", "method")] + PAPER
    X = as_X([abstract, paper_doc(nlp, rows)])
    counts = fit_members([member], X, ["background", "method", "result"] + [r[3] for r in rows], LABELS)
    assert counts["tfidf_expert"] == {"docs": 2, "sentences": 3 + len(rows), "labelled": 3 + len(rows)}
    assert speaks(member, X).tolist() == [1.0] * (3 + len(rows))
    assert speaks(member, X, silent_sections=["abstract"]).tolist() == [1.0] * 3 + [0.0] + [1.0] * len(PAPER)
    # a papers-only member may not be weighed on other docs; one of all docs may
    weights = {"paper_body": {"network": 0.5, "m": 0.5}, "paper_abstract": {"network": 1.0},
               "other_docs": {"network": 0.5, "m": 0.5}}
    mix = experts(constant([0.2, 0.3, 0.5]), {"m": member}, weights)
    assert mix.attrs["sections"]["m"] == {"silent_sections": ["abstract"], "paper_sections": []}
    with pytest.raises(RhetoricError, match="cannot speak"):
        experts(constant([0.2, 0.3, 0.5]), {"m": tfidf_expert(min_df=1, C=50.0)}, weights)


def test_the_shim_is_saved_as_plain_data_and_copied_with_the_model():
    import srsly

    nlp = spacy.blank("en")
    member = fitted(nlp)
    saved = srsly.msgpack_loads(member.shims[0].to_bytes())
    assert set(saved) == {"labels", "state"} and saved["labels"] == LABELS
    X = as_X([paper_doc(nlp, PAPER, labels=False)])
    copied = member.copy()
    assert copied.shims[0] is not member.shims[0] and is_fitted(copied)
    assert numpy.allclose(copied.predict(X), member.predict(X))
