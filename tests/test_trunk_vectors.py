"""One trunk, two heads: the full-paper classifier's fine-tuned member with a
vector head (``spacy_rhetoric.VectorHead.v1``, ml/finetuned.py) gives each
sentence's label and ``sent._.rhetoric_vector`` from one pass; on a tiny
random BERT (tests/helpers.py), offline."""
import numpy
import pytest
import spacy
from helpers import cnn_encoder, save_tiny_bert
from spacy.tokens import DocBin
from spacy.training import Example

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.errors import RhetoricError
from spacy_rhetoric.extensions import FINE_LABEL, HEADING, get_span_value, set_span_values
from spacy_rhetoric.pipeline.fitting import fit_pipeline_members
from spacy_rhetoric.readers.common import doc_from_sentences

CLASSIFIER = "rhetoric_function_classifier"
TOK2VEC = {"@architectures": "spacy.HashEmbedCNN.v2", "pretrained_vectors": None, "width": 16, "depth": 1,
           "embed_size": 300, "window_size": 1, "maxout_pieces": 2, "subword_features": True}
PAPERS = [
    (["Parsing is an old task.", "We train a graph parser.", "Accuracy rises by two points.", "Thanks to all."],
     ["introduction", "method", "results", "other"], ["1 Introduction", "2 Method", "3 Results", "Acknowledgments"],
     ["background", "method", "result", "other"], ["Bac", "Met", "Res", None]),
    (["Many parsers exist.", "We tune it on news.", "Recall rises too.", "We thank the reviewers."],
     ["introduction", "method", "results", "other"], ["1 Introduction", "2 Method", "3 Results", "Acknowledgments"],
     ["background", "method", "result", "other"], ["Bac", "Exp", "Res", None]),
]


def paper(nlp, sents, sections, headings, labels=None, fine=None):
    doc = doc_from_sentences(nlp, sents, labels=labels, sections=sections)
    set_span_values(doc, HEADING, list(doc.sents), headings)
    if fine is not None:
        set_span_values(doc, FINE_LABEL, list(doc.sents), fine)
    return doc


def model(trunk, vectors=True, width=8, pooling="pair"):
    finetuned = {"@architectures": "spacy_rhetoric.FinetunedMember.v1", "name": str(trunk), "frozen_layers": 0,
                 "epochs": 5.0, "batch_size": 4, "max_length": 32, "learn_from": {"@misc": "spacy_rhetoric.papers.v1"}}
    if vectors:
        finetuned["vectors"] = {"@misc": "spacy_rhetoric.VectorHead.v1", "width": width, "pooling": pooling,
                                "loss": {"@misc": "spacy_rhetoric.BatchAllTripletLoss.v1"}}
    return {"@architectures": "spacy_rhetoric.FullPaperSentenceClassifier.v4",
            "network": {"@architectures": "spacy_rhetoric.SectionAwareNetwork.v1", "width": 16,
                        "encoder": cnn_encoder(16, dropout=0.1), "ngram_size": 0, "tok2vec": TOK2VEC},
            "members": {"finetuned": finetuned},
            "weights": {"paper_body": {"network": 0.5, "finetuned": 0.5},
                        "paper_abstract": {"network": 0.5, "finetuned": 0.5},
                        "other_docs": {"network": 1.0}}}


def trained(tmp_path, **kwargs):
    trunk = save_tiny_bert(tmp_path / "bert")
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(CLASSIFIER, config={"model": model(trunk, **kwargs)})
    examples = [Example(paper(nlp, *p[:3]), paper(nlp, *p)) for p in PAPERS]
    nlp.initialize(lambda: examples)
    fit_pipeline_members(nlp, examples)
    return nlp


def vectors_of(doc):
    return [get_span_value(s, "vector") for s in doc.sents]


@pytest.mark.parametrize("pooling", ["pair", "sentence"])
def test_one_pass_gives_labels_and_vectors_on_every_sentence(tmp_path, pooling):
    nlp = trained(tmp_path, pooling=pooling)
    pipe = nlp.get_pipe(CLASSIFIER)
    shim = next(n for n in pipe.model.walk() if n.name == "finetuned_expert").shims[0]
    assert shim.cfg["vector_pooling"] == pooling and shim._model.vector_pooling == pooling
    # the fine gold labels, else the coarse one (back matter: "other")
    assert shim.cfg["vector_width"] == 8 and shim.cfg["vector_classes"] == ["Bac", "Exp", "Met", "Res", "other"]
    doc = nlp(paper(nlp, *PAPERS[0][:3]))
    vectors = vectors_of(doc)
    # every sentence, back matter (labelled "other" by rule) included
    assert all(v is not None and v.dtype == numpy.float32 and v.shape == (8,) for v in vectors)
    assert numpy.allclose([numpy.linalg.norm(v) for v in vectors], 1.0, atol=1e-5)
    assert [s._.rhetoric_label for s in doc.sents][-1] == "other"
    assert all(abs(sum(s._.rhetoric_scores.values()) - 1.0) < 1e-4 for s in doc.sents)
    first, second = list(doc.sents)[:2]
    assert first.similarity(second) == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-5)  # the hooks
    # plain text (no paper: the member is weighed 0 there) still gets the trunk's vectors
    plain = nlp("We train a graph parser. Recall rises too.")
    assert all(v is not None and v.shape == (8,) for v in vectors_of(plain))
    # they survive DocBin and a saved pipeline gives the same
    db = DocBin(store_user_data=True, docs=[doc])
    (back,) = list(db.from_bytes(db.to_bytes()).get_docs(nlp.vocab))
    assert all(numpy.allclose(a, b) for a, b in zip(vectors_of(back), vectors))
    nlp.to_disk(tmp_path / "nlp")
    again = spacy.load(tmp_path / "nlp")
    again_shim = next(n for n in again.get_pipe(CLASSIFIER).model.walk() if n.name == "finetuned_expert").shims[0]
    assert again_shim._model.vector_pooling == pooling
    doc2 = again(paper(again, *PAPERS[0][:3]))
    assert all(numpy.allclose(a, b, atol=1e-5) for a, b in zip(vectors_of(doc2), vectors))
    assert [s._.rhetoric_label for s in doc2.sents] == [s._.rhetoric_label for s in doc.sents]


def test_without_a_vector_head_no_vectors_and_the_same_labels_width(tmp_path):
    nlp = trained(tmp_path, vectors=False)
    doc = nlp(paper(nlp, *PAPERS[0][:3]))
    assert vectors_of(doc) == [None] * 4
    assert len(list(doc.sents)[0]._.rhetoric_scores) == 4
    assert nlp.get_pipe(CLASSIFIER).predict([nlp.make_doc("")]).shape == (0, 4)


def test_the_vector_head_is_checked():
    from spacy.util import registry

    head = registry.misc.get("spacy_rhetoric.VectorHead.v1")
    with pytest.raises(RhetoricError, match="metric losses"):
        head(loss="triplet")
    with pytest.raises(RhetoricError, match="width"):
        head(loss=registry.misc.get("spacy_rhetoric.NTXentLoss.v1")(), width=0)


def test_the_scorer_reports_the_vectors_retrieval(tmp_path):
    nlp = trained(tmp_path)
    examples = [Example(nlp(paper(nlp, *p[:3])), paper(nlp, *p)) for p in PAPERS]
    scores = nlp.get_pipe(CLASSIFIER).score(examples)
    assert 0.0 <= scores["rhetoric_vector_p_at_1"] <= 1.0 and 0.0 < scores["rhetoric_vector_map_at_r"] <= 1.0
    plain = trained(tmp_path / "plain", vectors=False)
    scores = plain.get_pipe(CLASSIFIER).score([Example(plain(paper(plain, *p[:3])), paper(plain, *p))
                                               for p in PAPERS])
    assert scores["rhetoric_vector_p_at_1"] is None and scores["rhetoric_f_micro"] is not None


def test_on_a_device_the_same_labels_and_vectors_in_device_arrays(tmp_path):
    """The classifier with a vector head on a simulated accelerator
    (tests/device_sim.py): the model's output (probabilities, then vectors)
    is a device array, equal to the CPU's, and the pipe stores the same
    vectors."""
    from device_sim import device_ops, host, is_device_array

    nlp = trained(tmp_path)
    nlp.to_disk(tmp_path / "nlp")
    cpu_doc = nlp(paper(nlp, *PAPERS[1][:3]))
    cpu_out = nlp.get_pipe(CLASSIFIER).predict([paper(nlp, *PAPERS[1][:3])])
    with device_ops():
        on_device = spacy.load(tmp_path / "nlp")
        pipe = on_device.get_pipe(CLASSIFIER)
        out = pipe.predict([paper(on_device, *PAPERS[1][:3])])
        assert is_device_array(out) and out.shape == (4, 4 + 8)
        numpy.testing.assert_allclose(host(out), cpu_out, atol=1e-5)
        doc = on_device(paper(on_device, *PAPERS[1][:3]))
    assert all(numpy.allclose(a, b, atol=1e-5) for a, b in zip(vectors_of(doc), vectors_of(cpu_doc)))


def test_commands_that_need_vectors_take_a_classifier_with_a_vector_head(tmp_path):
    """index / search / align / map check what a pipeline writes, not one
    factory's name: a classifier with a vector head is enough; one without is
    refused with the components named."""
    from spacy_rhetoric.apps.alignment import AlignmentError, align_encoded, encode_paper
    from spacy_rhetoric.capabilities import vector_components, vector_only_disabled
    from spacy_rhetoric.search.sources import SearchIndexError, check_pipeline

    nlp = trained(tmp_path)
    assert vector_components(nlp) == [CLASSIFIER]
    assert vector_only_disabled(nlp) == ["sentencizer"]
    check_pipeline(nlp)
    a = encode_paper(nlp, paper(nlp, *PAPERS[0][:3]), name="a")
    b = encode_paper(nlp, paper(nlp, *PAPERS[1][:3]), name="b")
    pairs = align_encoded(a, b)
    assert len(pairs) == 4 and all(-1.0 <= p.score <= 1.0 + 1e-5 for p in pairs)
    plain = trained(tmp_path / "plain", vectors=False)
    assert vector_components(plain) == []
    with pytest.raises(SearchIndexError, match="sets no sentence vectors.*rhetoric_function_classifier"):
        check_pipeline(plain)
    with pytest.raises(AlignmentError, match="sets no sentence vectors"):
        encode_paper(plain, paper(plain, *PAPERS[0][:3]), name="a")
