"""spacy_rhetoric.long_docs: split a long text into pieces, process them one
at a time, join them back into one Doc with every per-sentence output."""
import numpy
import pytest
import spacy
from spacy.tokens import DocBin
from spacy.training import Example

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric import extensions as ext
from spacy_rhetoric.long_docs import join_docs, process_long_text, split_text
from spacy_rhetoric.readers.common import doc_from_sentences

PARAS = [
    "Machine translation is an important problem. We aim to improve rare words.",
    "We propose a copy mechanism.\nOur results show a gain of two points.",
    "Graph data is an important resource. We propose a sampler. It works well.",
]
TEXT = "\n\n".join(PARAS * 4)


def test_split_text_prefers_paragraphs_and_round_trips():
    pieces = split_text(TEXT, max_chars=200)
    assert "".join(pieces) == TEXT
    assert all(len(p) <= 200 for p in pieces)
    assert all(p.endswith("\n\n") for p in pieces[:-1])  # cut after blank lines
    # a paragraph longer than max_chars is cut at a sentence end, then whitespace, then hard
    long_para = "One two three. Four five six seven. Eight nine."
    pieces = split_text(long_para, max_chars=20)
    assert "".join(pieces) == long_para and all(len(p) <= 20 for p in pieces)
    assert pieces[0] == "One two three. "
    assert split_text("x" * 25, max_chars=10) == ["x" * 10, "x" * 10, "x" * 5]
    assert split_text("", max_chars=10) == [""]
    with pytest.raises(ValueError, match="max_chars"):
        split_text(TEXT, max_chars=0)


@pytest.fixture(scope="module")
def nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_function_classifier")
    nlp.add_pipe("rhetoric_sentence_encoder")
    labels = ["background", "objective", "method", "result"]
    refs = [doc_from_sentences(nlp, ["A b c.", "D e f.", "G h i.", "J k l."], labels=labels)]
    examples = [Example(nlp.make_doc(r.text), r) for r in refs]
    nlp.initialize(lambda: examples)
    return nlp


def test_joined_doc_has_the_text_sentences_and_outputs(nlp, tmp_path):
    doc = process_long_text(nlp, TEXT, max_chars=200)
    assert doc.text == TEXT
    pieces = split_text(TEXT, max_chars=200)
    piece_docs = [nlp(p) for p in pieces]
    expected_sents = [s.text for d in piece_docs for s in d.sents]
    assert [s.text for s in doc.sents] == expected_sents
    got = [(s._.rhetoric_label, s._.rhetoric_vector) for s in doc.sents]
    want = [(s._.rhetoric_label, s._.rhetoric_vector) for d in piece_docs for s in d.sents]
    assert [g[0] for g in got] == [w[0] for w in want]
    # every sentence but the whitespace-only ones ("\n\n" at the end of a piece)
    blank = [not s.text.strip() for s in doc.sents]
    assert any(blank)
    assert [g[0] is None for g in got] == blank and [g[1] is None for g in got] == blank
    for (_, a), (_, b) in zip(got, want):
        if a is not None:
            numpy.testing.assert_allclose(a, b, atol=1e-5)
    assert ("._.", "trf_data", None, None) not in doc.user_data
    # the joined doc keeps its outputs through DocBin
    bin_ = DocBin(store_user_data=True, docs=[doc])
    again = list(DocBin().from_bytes(bin_.to_bytes()).get_docs(nlp.vocab))[0]
    assert [s._.rhetoric_label for s in again.sents] == [g[0] for g in got]


def test_short_text_is_one_call(nlp):
    doc = process_long_text(nlp, PARAS[0], max_chars=1000)
    assert doc.text == PARAS[0] and len(list(doc.sents)) == 2


def test_join_shifts_phrase_matches_and_citance_links():
    nlp = spacy.blank("en")
    a = doc_from_sentences(nlp, ["We use a parser.", "It works."], labels=["m", "r"])
    b = doc_from_sentences(nlp, ["Table 2 shows results."], labels=["t"])
    sent_b = list(b.sents)[0]
    ext.set_span_values(b, ext.PHRASE_MATCH, [sent_b], [b[0:3]])
    ext.set_doc_value(b, ext.CITANCE_LINKS, [{"start_char": 0, "end_char": 22, "links": []}])
    a_text = a.text + " "
    a2 = nlp.make_doc(a_text)
    for i, tok in enumerate(a2):
        tok.is_sent_start = i in (0, 5)
    ext.set_sent_labels(a2, ["m", "r"])
    joined = join_docs([a2, b])
    sents = list(joined.sents)
    assert [s._.rhetoric_label for s in sents] == ["m", "r", "t"]
    assert sents[2]._.phrase_match.text == "Table 2 shows"
    (link,) = joined._.citance_links
    assert joined.text[link["start_char"]:link["end_char"]] == "Table 2 shows results."
