import numpy
import pytest
import spacy
from spacy.tokens import DocBin
from spacy.vocab import Vocab

import spacy_rhetoric
from spacy_rhetoric import extensions as ext


def _doc():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp, nlp("We study parsing. Prior work is limited. Results improve a lot.")


def _fill(doc):
    sents = list(doc.sents)
    spacy_rhetoric.set_sent_labels(doc, ["objective", None, "result"])
    ext.set_span_values(doc, ext.SCORES, sents, [{"objective": 0.9, "result": 0.1}] * 3)
    ext.set_span_values(doc, ext.VECTOR, sents[:1], [numpy.array([0.6, 0.8], dtype="float32")])
    spacy_rhetoric.set_sent_sections(doc, ["abstract"] * 3)
    ext.set_span_values(doc, ext.PHRASE_LABEL, sents[1:2], ["Showing limitation or lack of past work"])
    ext.set_span_values(doc, ext.PHRASE_MATCH, sents[1:2], [doc[sents[1].start : sents[1].start + 3]])


def _check(doc):
    sents = list(doc.sents)
    assert [s._.rhetoric_label for s in sents] == ["objective", None, "result"]
    assert sents[0]._.rhetoric_scores == pytest.approx({"objective": 0.9, "result": 0.1})
    vec = sents[0]._.rhetoric_vector
    assert vec.dtype == numpy.float32 and vec.tolist() == pytest.approx([0.6, 0.8])
    assert sents[1]._.rhetoric_vector is None
    assert [s._.rhetoric_section for s in sents] == ["abstract"] * 3
    assert sents[1]._.phrase_label == "Showing limitation or lack of past work"
    assert sents[1]._.phrase_match.text == "Prior work is"
    assert sents[0]._.phrase_match is None


def test_install_extensions_idempotent():
    spacy_rhetoric.install_extensions()
    spacy_rhetoric.install_extensions()
    assert spacy.tokens.Span.has_extension("rhetoric_label")


def test_values_on_fresh_sentence_spans():
    _, doc = _doc()
    _fill(doc)
    _check(doc)  # doc.sents builds new Span objects: values still there


def test_attributes_and_helpers_are_one_store():
    """sent._ attributes are spaCy's own extension values: written directly,
    the helpers read them, and the other way round; spaCy keys them by
    character offsets."""
    _, doc = _doc()
    first, second, _ = doc.sents
    first._.rhetoric_label = "method"
    assert ext.get_sent_labels(doc) == ["method", None, None]
    assert ext.labelled_spans(doc) == [(first.start, first.end, "method")]
    ext.set_span_values(doc, ext.SCORES, [second], [{"result": 1}])
    assert list(doc.sents)[1]._.rhetoric_scores == {"result": 1.0}
    assert doc.user_data[("._.", "rhetoric_label", first.start_char, first.end_char)] == "method"
    ext.set_span_values(doc, ext.LABEL, [first], [None])
    assert list(doc.sents)[0]._.rhetoric_label is None and not ext.labelled_spans(doc)
    with pytest.raises(TypeError, match="must be str"):
        ext.set_span_values(doc, ext.LABEL, [first], [3])
    with pytest.raises(TypeError, match="lists of str"):
        first._.rhetoric_gold_labels = "method"


def test_other_field_names_get_their_own_attribute():
    """A component configured with a field of no listed attribute (e.g.
    label_field = "move") writes sent._.rhetoric_move."""
    _, doc = _doc()
    ext.set_span_values(doc, "move", list(doc.sents)[:1], ["m1"])
    assert [s._.rhetoric_move for s in doc.sents] == ["m1", None, None]
    assert ext.labelled_spans(doc, field="move") == [(0, 4, "m1")]
    ext.set_doc_value(doc, "venue", "ACL")
    assert doc._.rhetoric_venue == "ACL" and ext.get_doc_value(doc, "venue") == "ACL"


def test_from_docs_and_as_doc_shift_the_values():
    """Doc.from_docs moves every sentence value with its sentence (the
    phrase match too: it is stored relative to its sentence)."""
    nlp, a = _doc()
    _fill(a)
    b = nlp("Nothing here. Prior work is limited.")
    joined = spacy.tokens.Doc.from_docs([b, a])
    sents = list(joined.sents)
    assert [s._.rhetoric_label for s in sents] == [None, None, "objective", None, "result"]
    assert sents[3]._.phrase_match.text == "Prior work is"
    assert sents[2]._.rhetoric_vector.tolist() == pytest.approx([0.6, 0.8])
    piece = joined[sents[2].start:].as_doc(copy_user_data=True)
    _check(piece)


def test_upgrade_legacy_store():
    """A Doc saved by the earlier layout (one mapping in
    user_data["spacy_rhetoric"], token offsets) reads as a new one."""
    _, doc = _doc()
    vec = numpy.array([0.6, 0.8], dtype="float32").tobytes()
    doc.user_data["spacy_rhetoric"] = {
        "label": {"0:4": "objective", "9:14": "result"},
        "scores": {"0:4": {"objective": 0.9, "result": 0.1}},
        "vector": {"0:4": vec},
        "section": {"0:4": "abstract", "4:9": "abstract", "9:14": "abstract"},
        "phrase_label": {"4:9": "Showing limitation or lack of past work"},
        "phrase_match": {"4:9": [4, 7]},
        "doc_id": "p1",
        "fold": "train2",  # a reader's doc-level value of no listed attribute (readers/mulms.py)
    }
    data = DocBin(docs=[doc], store_user_data=True).to_bytes()
    (old,) = DocBin().from_bytes(data).get_docs(doc.vocab)
    assert [s._.rhetoric_label for s in old.sents] == [None] * 3
    _check(ext.upgrade_legacy_store(old))
    assert old._.rhetoric_doc_id == "p1" and "spacy_rhetoric" not in old.user_data
    assert ext.get_doc_value(old, "fold") == "train2"
    (read,) = ext.docbin_docs(DocBin().from_bytes(data), doc.vocab)  # how the package reads .spacy files
    _check(read)


def test_set_sent_labels_length_mismatch():
    _, doc = _doc()
    with pytest.raises(ValueError, match="3 sentences but 2 labels"):
        spacy_rhetoric.set_sent_labels(doc, ["a", "b"])


def test_docbin_roundtrip_new_vocab():
    _, doc = _doc()
    _fill(doc)
    data = DocBin(docs=[doc], store_user_data=True).to_bytes()
    (doc2,) = DocBin().from_bytes(data).get_docs(Vocab())
    _check(doc2)


def test_doc_bytes_roundtrip_and_copy_isolation():
    _, doc = _doc()
    _fill(doc)
    doc2 = spacy.tokens.Doc(doc.vocab).from_bytes(doc.to_bytes())
    _check(doc2)
    copy = doc.copy()
    spacy_rhetoric.set_sent_labels(copy, ["x", "y", "z"])
    _check(doc)


def test_nlp_to_disk_load_keeps_extensions(tmp_path):
    nlp, _ = _doc()
    nlp.to_disk(tmp_path / "p")
    nlp2 = spacy.load(tmp_path / "p")
    doc = nlp2("One sentence here. Another one.")
    spacy_rhetoric.set_sent_labels(doc, ["a", "b"])
    assert [s._.rhetoric_label for s in doc.sents] == ["a", "b"]


def test_restore_vector_hooks_from_the_store_alone():
    """The hooks read the stored vectors: any doc with them (here filled by
    hand, read back from a DocBin) gets sent.vector / sent.similarity back."""
    _, doc = _doc()
    sents = list(doc.sents)
    vectors = [numpy.array(v, dtype="float32") for v in ([0.6, 0.8], [1.0, 0.0], [0.0, 1.0])]
    ext.set_span_values(doc, ext.VECTOR, sents, vectors)
    doc2 = spacy.tokens.Doc(doc.vocab).from_bytes(doc.to_bytes())
    assert "similarity" not in doc2.user_span_hooks
    assert spacy_rhetoric.restore_vector_hooks([doc2]) == [doc2]
    a, b, c = doc2.sents
    assert a.vector.tolist() == pytest.approx([0.6, 0.8])
    assert a.similarity(b) == pytest.approx(0.6) and a._.rhetoric_similarity(c) == pytest.approx(0.8)
    # never another model's numbers: a span without an encoder vector is an error
    with pytest.raises(ValueError, match="no encoder vector"):
        a.similarity(doc2[0:2])


def test_docbin_docs_have_the_vector_hooks_at_once():
    """A doc read back from a DocBin compares its sentences by their stored
    vectors right away (the package wraps DocBin.get_docs); a doc without
    sentence vectors is left as spaCy gives it."""
    _, doc = _doc()
    sents = list(doc.sents)
    vectors = [numpy.array(v, dtype="float32") for v in ([0.6, 0.8], [1.0, 0.0], [0.0, 1.0])]
    ext.set_span_values(doc, ext.VECTOR, sents, vectors)
    _, plain = _doc()
    data = DocBin(docs=[doc, plain], store_user_data=True).to_bytes()
    back, plain_back = DocBin().from_bytes(data).get_docs(doc.vocab)
    a, b, _ = back.sents
    assert a.similarity(b) == pytest.approx(0.6)
    assert "similarity" not in plain_back.user_span_hooks
