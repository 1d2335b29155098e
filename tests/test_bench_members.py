"""The member rows of benchmarks/fullpaper (evaluation.pipelines.member_probabilities, mixture_labels) on a tiny
full-paper mixture (network + TF-IDF members): one pass of the pipeline gives each member's probabilities
exactly as running the mixture with that member alone does, back matter forced to "other" for every member,
and the pass's own labels are the mixture of those probabilities."""
import numpy
import pytest
import spacy
from helpers import FULL, sectioned_doc, train_nlp

from spacy_rhetoric.evaluation.pipelines import member_probabilities, mixture_labels, pipeline_scores


def papers(nlp):
    return [sectioned_doc(nlp, ["Parsing is old.", "These numbers are given in the table.", "We build a parser."],
                          ["introduction", "results", "method"], ["1 Introduction", "4 Results", "3 Method"]),
            sectioned_doc(nlp, ["We build a parser.", "Thanks to all."], ["method", "other"],
                          ["3 Method", "Acknowledgments"])]


def one_member_at_a_time(nlp, docs, node, name):
    saved = node.attrs["weights"]
    node.attrs["weights"] = {scope: {name: 1.0} for scope in saved}
    try:
        labels = list(nlp.get_pipe("rhetoric_function_classifier").labels)
        return numpy.asarray([[s[label] for label in labels] for d in pipeline_scores(nlp, docs) for s in d])
    finally:
        node.attrs["weights"] = saved


@pytest.mark.slow  # trains the tiny mixture 60 steps
def test_member_probabilities_one_pass_matches_each_member_alone():
    nlp = train_nlp(**FULL)
    docs = papers(nlp)
    clf = nlp.get_pipe("rhetoric_function_classifier")
    node = next(n for n in clf.model.walk() if n.name == "experts")
    forward, member_funcs = node._func, [m._func for m in node.layers]
    scores = []
    probs = member_probabilities(nlp, docs, scores=scores)
    assert node._func is forward and [m._func for m in node.layers] == member_funcs  # nothing wrapped
    assert set(probs) == {"network", "tfidf_expert", "tfidf_expert_others"}
    labels = list(clf.labels)
    for name in ("network", "tfidf_expert"):
        assert probs[name].shape == (5, len(labels))
        assert numpy.allclose(probs[name], one_member_at_a_time(nlp, docs, node, "network" if name == "network"
                                                                else "tfidf"), atol=1e-5)
        assert probs[name][4].tolist() == [1.0 if label == "other" else 0.0 for label in labels]  # back matter
    # the pass's own labels: the shipped mixture of the members it captured (paper body: 0.5 / 0.5)
    rows = [{"section": s} for s in ("introduction", "results", "method", "method", "other")]
    mixed = mixture_labels(probs, {"network": 0.5, "tfidf_expert": 0.5}, labels, rows)
    assert mixed == [max(s, key=s.get) for d in scores for s in d]
    assert len(scores) == 2 and len(scores[0]) == 3
    plain = pipeline_scores(nlp, docs)  # the recorded pass scored as a plain one does
    assert all(numpy.allclose([a[k] for k in labels], [b[k] for k in labels], atol=1e-6)
               for da, db in zip(scores, plain) for a, b in zip(da, db))
    # one member alone: its own argmax
    assert mixture_labels(probs, {"network": 1.0}, labels, rows) == [
        labels[int(i)] for i in probs["network"].argmax(axis=1)]


def initialized_nlp():
    """The tiny full-paper mixture initialized and its TF-IDF members fitted, the network not trained."""
    from helpers import CLASSIFIER, TRAIN, model_config
    from spacy.training import Example

    from spacy_rhetoric.pipeline.fitting import fit_pipeline_members

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(CLASSIFIER, config={"model": model_config(**FULL)})
    examples = [Example(sectioned_doc(nlp, sents, sections, headings), sectioned_doc(nlp, sents, sections, headings,
                                                                                      labels))
                for sents, sections, headings, labels in TRAIN]
    nlp.initialize(lambda: examples)
    fit_pipeline_members(nlp, examples)
    return nlp


def test_member_outputs_record_every_member_once_per_batch_and_stop_with_the_pass():
    from spacy_rhetoric.ml.experts import member_outputs

    nlp = initialized_nlp()
    docs = papers(nlp)
    clf = nlp.get_pipe("rhetoric_function_classifier")
    plain = pipeline_scores(nlp, docs)
    with member_outputs(clf.model) as batches:
        recorded = pipeline_scores(nlp, docs)
    assert recorded == plain  # recording runs every member but mixes as before
    n_members = len(next(n for n in clf.model.walk() if n.name == "experts").layers)
    assert sum(outputs.shape[1] for _, outputs in batches) == 5
    assert all(outputs.shape[0] == n_members and outputs.shape[2] == len(clf.labels) for _, outputs in batches)
    pipeline_scores(nlp, docs)
    assert sum(outputs.shape[1] for _, outputs in batches) == 5  # closed: later passes are not recorded
    probs = member_probabilities(nlp, docs)
    assert set(probs) == {"network", "tfidf_expert", "tfidf_expert_others"}
    assert all(p.shape == (5, len(clf.labels)) for p in probs.values())
