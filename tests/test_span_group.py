"""doc.spans["rhetoric"]: the classifier's sentences as a spaCy span group
(label = function, attrs["scores"] as spancat), read by spaCy's own tools and
kept through the usual round trips; every factory's `assigns`."""
import numpy
import pytest
import spacy
from spacy import displacy
from spacy.scorer import Scorer
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example
from spacy.util import fix_random_seed
from thinc.api import Adam

from spacy_rhetoric import process_long_text, set_sent_labels
from spacy_rhetoric.extensions import FINE_LABEL, FINE_SCORES
from spacy_rhetoric.long_docs import split_text
from spacy_rhetoric.pipeline.function_classifier import default_spans_key, score_function_classifier
from spacy_rhetoric.readers.common import doc_from_sentences

DATA = [
    (["Parsing is widely used.", "We propose a graph model.", "Accuracy improves by two points."],
     ["background", "method", "result"]),
    (["Citation graphs are large.", "We train a ranking network.", "Recall improves on both sets."],
     ["background", "method", "result"]),
]
FINE = {"background": "Importance of the topic", "method": "Aim or method", "result": "Description of results"}
MODEL = {
    "@architectures": "spacy_rhetoric.SentenceClassifier.v1",
    "hidden_size": 16,
    "dropout": 0.0,
    "tok2vec": {
        "@architectures": "spacy.HashEmbedCNN.v2", "pretrained_vectors": None, "width": 32, "depth": 1,
        "embed_size": 500, "window_size": 1, "maxout_pieces": 3, "subword_features": True,
    },
}
TEXT = " ".join(DATA[0][0])


def gold_doc(nlp, sents, labels):
    doc = doc_from_sentences(nlp, sents, labels=labels)
    set_sent_labels(doc, [FINE[label] for label in labels], field=FINE_LABEL)
    doc.spans["rhetoric"] = [Span(doc, s.start, s.end, label=label) for s, label in zip(doc.sents, labels)]
    return doc


@pytest.fixture(scope="module")
def nlp():
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_function_classifier", config={"model": MODEL})
    nlp.add_pipe("rhetoric_function_classifier", name="fine", config={
        "model": MODEL, "label_field": FINE_LABEL, "scores_field": FINE_SCORES, "gold_field": FINE_LABEL,
    })
    examples = [Example(nlp.make_doc(" ".join(s)), gold_doc(nlp, s, labels)) for s, labels in DATA]
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    for _ in range(30):
        nlp.update(examples, sgd=optimizer)
    return nlp


def check_group(doc, key="rhetoric", label_ext="rhetoric_label", scores_ext="rhetoric_scores"):
    group = doc.spans[key]
    sents = [s for s in doc.sents if s.text.strip()]
    assert [(s.start, s.end) for s in group] == [(s.start, s.end) for s in sents]
    assert [s.label_ for s in group] == [s._.get(label_ext) for s in sents]
    # one store: the group's spans read the same extension values as the sentences
    assert [s._.get(label_ext) for s in group] == [s.label_ for s in group]
    expected = [s._.get(scores_ext)[s._.get(label_ext)] for s in sents]
    numpy.testing.assert_allclose(group.attrs["scores"], expected, rtol=1e-6)
    return [(s.start, s.end, s.label_) for s in group], list(group.attrs["scores"])


def test_classifiers_write_one_span_per_sentence(nlp):
    doc = nlp(TEXT + "\n\n")
    coarse, _ = check_group(doc)
    assert [label for *_, label in coarse] == DATA[0][1]
    fine, _ = check_group(doc, "rhetoric_fine", "rhetoric_fine_label", "rhetoric_fine_scores")
    assert [label for *_, label in fine] == [FINE[label] for label in DATA[0][1]]
    assert nlp.get_pipe("rhetoric_function_classifier").spans_key == "rhetoric"
    assert nlp.get_pipe("fine").spans_key == "rhetoric_fine"
    assert len(nlp("").spans["rhetoric"]) == 0


def test_spans_key_setting():
    assert default_spans_key("label") == "rhetoric"
    assert default_spans_key("fine_label") == "rhetoric_fine"
    assert default_spans_key("other") == "rhetoric_other"
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    clf = nlp.add_pipe("rhetoric_function_classifier", config={"model": MODEL, "spans_key": "moves"})
    nlp.initialize(lambda: [Example(nlp.make_doc(" ".join(s)), gold_doc(nlp, s, labels)) for s, labels in DATA])
    doc = nlp(TEXT)
    assert clf.spans_key == "moves" and "rhetoric" not in doc.spans
    check_group(doc, "moves")
    with pytest.raises(ValueError, match="spans_key"):
        nlp.add_pipe("rhetoric_function_classifier", name="bad", config={"spans_key": ""})


def test_spacy_tools_read_the_group(nlp):
    doc = nlp(TEXT)
    html = displacy.render(doc, style="span", options={"spans_key": "rhetoric"})
    assert all(label in html for label in DATA[0][1])
    refs = [gold_doc(nlp, s, ["background", "method", "method"]) for s, _ in DATA]
    examples = [Example(nlp(ref.text), ref) for ref in refs]
    spans = Scorer.score_spans(examples, "spans", getter=lambda d, key: d.spans["rhetoric"])
    # same sentences on both sides, one label each: span P = R = F = the classifier's F1-micro
    ours = score_function_classifier(examples)["rhetoric_f_micro"]
    assert ours == pytest.approx(2 / 3)
    assert spans["spans_f"] == pytest.approx(ours)


def test_round_trips(nlp, tmp_path):
    doc = nlp(TEXT)
    want = check_group(doc)
    (again,) = DocBin(store_user_data=True, docs=[doc]).get_docs(nlp.vocab)
    assert check_group(again) == want
    assert check_group(Doc(nlp.vocab).from_bytes(doc.to_bytes())) == want
    nlp.to_disk(tmp_path / "pipeline")
    assert check_group(spacy.load(tmp_path / "pipeline")(TEXT)) == want


def test_process_long_text_joins_the_groups(nlp):
    text = "\n\n".join([TEXT] * 4)
    doc = process_long_text(nlp, text, max_chars=len(TEXT) + 10)
    pieces = [nlp(piece) for piece in split_text(text, max_chars=len(TEXT) + 10)]
    assert len(pieces) == 4
    labels, scores = check_group(doc)
    assert [label for *_, label in labels] == [s.label_ for piece in pieces for s in piece.spans["rhetoric"]]
    numpy.testing.assert_allclose(
        scores, numpy.concatenate([piece.spans["rhetoric"].attrs["scores"] for piece in pieces]), rtol=1e-6
    )


def test_factories_say_what_they_assign():
    nlp = spacy.blank("en")
    assigns = {name: set(nlp.get_factory_meta(name).assigns) for name in (
        "rhetoric_function_classifier", "rhetoric_sentence_encoder", "rhetoric_phrase_labeler")}
    assert {"doc.spans", "span._.rhetoric_label", "span._.rhetoric_scores"} <= assigns["rhetoric_function_classifier"]
    assert {"span._.rhetoric_vector", "doc.user_span_hooks"} <= assigns["rhetoric_sentence_encoder"]
    assert {"span._.phrase_label", "span._.phrase_match"} <= assigns["rhetoric_phrase_labeler"]
