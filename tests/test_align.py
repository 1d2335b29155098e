"""Functional alignment of two papers (spacy_rhetoric.apps.alignment, ``spacy-rhetoric align``):
nearest-neighbour search, paper formats (XML / .spacy / text), preset boundaries,
a tiny trained encoder that aligns sentences by function, the CLI, errors."""
import json

import numpy
import pytest
import spacy
import srsly
from spacy.tokens import DocBin
from spacy.training import Example
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
from spacy_rhetoric import extensions
from spacy_rhetoric.apps.alignment import (
    AlignmentError,
    align_encoded,
    align_papers,
    alignment_summary,
    encode_paper,
    read_paper,
)
from spacy_rhetoric.readers.common import doc_from_sentences

LABELS = ["background", "objective", "method", "result"]
TRAIN = [
    ["Machine translation is an important problem.",
     "We aim to improve translation of rare words.",
     "We propose a copy mechanism for the decoder.",
     "Our results show a gain of two BLEU points."],
    ["Graph data is an important resource.",
     "We aim to classify nodes in large graphs.",
     "We propose a sampling method for the encoder.",
     "Our results show a gain of five accuracy points."],
    ["Speech recognition is an important task.",
     "We aim to reduce errors on noisy audio.",
     "We propose an attention mechanism for the acoustic model.",
     "Our results show a gain of three points in error rate."],
    ["Parsing is an important step.",
     "We aim to parse long sentences quickly.",
     "We propose a chart pruning method for the parser.",
     "Our results show a gain of four points in speed."],
]
# Paper A and B: unseen sentences with the same four functions; B in another order.
PAPER_A = [
    "Summarization is an important application.",
    "We aim to summarize long documents.",
    "We propose a hierarchical method for the summarizer.",
    "Our results show a gain of six ROUGE points.",
]
PAPER_B = [
    "Our results show a gain of one point in recall.",
    "We propose a retrieval mechanism for the reader.",
    "Question answering is an important problem.",
    "We aim to answer questions over tables.",
]
B_LABELS = ["result", "method", "background", "objective"]


@pytest.fixture(scope="module")
def trained_nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_sentence_encoder")
    examples = []
    for sents in TRAIN:
        ref = doc_from_sentences(nlp, sents, labels=LABELS)
        examples.append(Example(nlp.make_doc(ref.text), ref))
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(40):
        nlp.update(examples, sgd=optimizer, losses={})
    return nlp


@pytest.fixture(scope="module")
def model_dir(trained_nlp, tmp_path_factory):
    path = tmp_path_factory.mktemp("align_model")
    trained_nlp.to_disk(path)
    return path


def write_lines(path, sentences):
    path.write_text("\n".join(sentences) + "\n", encoding="utf8")
    return path


def write_reference_xml(path, paper_id, sentences):
    body = "\n".join(f'<S sid="{i + 1}" ssid="{i + 1}">{s}</S>' for i, s in enumerate(sentences))
    path.write_text(f'<PAPER>\n<ABSTRACT>\n{body}\n</ABSTRACT>\n</PAPER>\n',
                    encoding="utf8")
    return path


# -- paper formats ---------------------------------------------------------------

def test_read_paper_formats_keep_boundaries(tmp_path):
    nlp = spacy.blank("en")
    # One sentence with an inner full stop: preset boundaries must keep it whole.
    sents = ["We use the method of Smith et al. It works.", "Results are good."]
    xml = write_reference_xml(tmp_path / "P1.xml", "P1", sents)
    doc = read_paper(xml, nlp)
    assert [s.text for s in doc.sents] == sents
    assert [extensions.get_span_value(s, extensions.SID) for s in doc.sents] == ["1", "2"]
    db = DocBin(store_user_data=True)
    db.add(doc_from_sentences(nlp, sents[:1]))
    db.add(doc_from_sentences(nlp, sents[1:]))
    db.to_disk(tmp_path / "p.spacy")
    assert [s.text for s in read_paper(tmp_path / "p.spacy", nlp).sents] == sents
    lined = read_paper(write_lines(tmp_path / "p.txt", sents), nlp, lines=True)
    assert [s.text for s in lined.sents] == sents
    # plain text is split as `convert text` splits it: never after "et al."
    raw = read_paper(tmp_path / "p.txt", nlp)
    assert raw.text == " ".join(sents) and [s.text for s in raw.sents] == sents


def test_read_paper_takes_the_paper_formats(tmp_path, shared_data):
    """GROBID TEI and JATS papers as align's inputs (not only CL-SciSumm XML):
    read by the paper readers, with their headings."""
    nlp = spacy.blank("en")
    formats = shared_data / "paper-formats"
    for path in (formats / "grobid-tei" / "N18-3011.tei.xml", formats / "jats" / "PMC6398430.nxml"):
        doc = read_paper(path, nlp)
        sents = list(doc.sents)
        assert len(sents) > 50
        assert any(extensions.get_span_value(s, extensions.HEADING) for s in sents)


def test_read_paper_errors(tmp_path):
    nlp = spacy.blank("en")
    with pytest.raises(AlignmentError, match="No such file"):
        read_paper(tmp_path / "missing.txt", nlp)
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf8")
    with pytest.raises(AlignmentError, match="empty.txt"):
        read_paper(tmp_path / "empty.txt", nlp)
    (tmp_path / "bad.spacy").write_bytes(b"not a docbin")
    with pytest.raises(AlignmentError, match="bad.spacy"):
        read_paper(tmp_path / "bad.spacy", nlp)
    (tmp_path / "bad.xml").write_text("<PAPER><S sid='1'>x</PAPER", encoding="utf8")
    with pytest.raises(AlignmentError, match="bad.xml"):
        read_paper(tmp_path / "bad.xml", nlp)


def test_pipeline_without_encoder_is_refused(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    with pytest.raises(AlignmentError, match="sets no sentence vectors"):
        encode_paper(nlp, write_lines(tmp_path / "a.txt", PAPER_A), lines=True)


# -- alignment with a trained encoder ---------------------------------------------

def test_preset_boundaries_survive_the_sentencizer(trained_nlp, tmp_path):
    sents = ["We use the method of Smith et al. It works.", "Results are good."]
    enc = encode_paper(trained_nlp, write_reference_xml(tmp_path / "P2.xml", "P2", sents))
    assert [s.text for s in enc.sentences] == sents and enc.vectors.shape[0] == 2
    raw = encode_paper(trained_nlp, write_lines(tmp_path / "raw.txt", sents))
    assert [s.text for s in raw.sentences] == sents  # the readers' splitter: not after "et al."


def test_alignment_by_function(trained_nlp, tmp_path):
    a = write_lines(tmp_path / "a.txt", PAPER_A)
    b = write_lines(tmp_path / "b.txt", PAPER_B)
    pairs = align_papers(trained_nlp, a, b, lines=True)
    assert [p.a_index for p in pairs] == [0, 1, 2, 3]
    assert [p.a_text for p in pairs] == PAPER_A
    matched = [B_LABELS[p.b_index] for p in pairs]
    assert matched == LABELS
    assert all(p.b_text == PAPER_B[p.b_index] for p in pairs)
    # The score is the cosine of the stored sentence vectors.
    enc_a = encode_paper(trained_nlp, a, lines=True)
    enc_b = encode_paper(trained_nlp, b, lines=True)
    for p in pairs:
        va = enc_a.sentences[p.a_index]._.rhetoric_vector
        vb = enc_b.sentences[p.b_index]._.rhetoric_vector
        assert p.score == pytest.approx(float(numpy.dot(va, vb)), abs=1e-5)
        assert p.score == pytest.approx(max(float(numpy.dot(va, s._.rhetoric_vector)) for s in enc_b.sentences), abs=1e-5)
    summary = alignment_summary(pairs)
    assert summary["n"] == 4 and summary["b_matched"] == 4


def test_top_k_alignment_ranks(trained_nlp, tmp_path):
    enc_a = encode_paper(trained_nlp, write_lines(tmp_path / "a.txt", PAPER_A), lines=True)
    enc_b = encode_paper(trained_nlp, write_lines(tmp_path / "b.txt", PAPER_B), lines=True)
    pairs = align_encoded(enc_a, enc_b, k=2)
    assert len(pairs) == 8
    for i in range(4):
        first, second = pairs[2 * i], pairs[2 * i + 1]
        assert (first.rank, second.rank) == (1, 2) and first.a_index == second.a_index == i
        assert first.score >= second.score and first.b_index != second.b_index
    # k is capped to B's length; k < 1 is an error, not silently 1.
    assert len(align_encoded(enc_a, enc_b, k=9)) == 16
    with pytest.raises(ValueError, match="at least 1"):
        align_encoded(enc_a, enc_b, k=0)


def test_cli_align(model_dir, tmp_path):
    from spacy_rhetoric.cli import app, load_commands

    load_commands()
    a = write_reference_xml(tmp_path / "A.xml", "A", PAPER_A)
    db = DocBin(store_user_data=True)
    db.add(doc_from_sentences(spacy.blank("en"), PAPER_B))
    db.to_disk(tmp_path / "B.spacy")
    out = tmp_path / "pairs.jsonl"
    result = CliRunner().invoke(app, ["align", str(a), str(tmp_path / "B.spacy"), "--model", str(model_dir),
                                      "--output", str(out), "--width", "0"])
    assert result.exit_code == 0, result.output
    rows = list(srsly.read_jsonl(out))
    assert [r["a_sid"] for r in rows] == ["1", "2", "3", "4"]
    assert [B_LABELS[r["b_index"]] for r in rows] == LABELS
    for r in rows:
        assert r["a_text"] in result.output and f"{r['score']:.3f}" in result.output
    json.dumps(rows)  # plain JSON types
    bad = CliRunner().invoke(app, ["align", str(a), str(tmp_path / "nope.txt"), "--model", str(model_dir)])
    assert bad.exit_code != 0 and "nope.txt" in bad.output
