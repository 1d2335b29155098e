"""spacy_rhetoric.sentence_windows.v1: transformer windows of whole sentences."""
import pytest
import spacy
from spacy.tokens import Doc
from spacy_transformers.util import registry

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.ml.span_getters import sentence_windows
from spacy_rhetoric.util import resolve_hf_model


def make_doc(sentence_lengths):
    """A Doc whose sentences have the given token counts."""
    words, starts = [], []
    for n, length in enumerate(sentence_lengths):
        for i in range(length):
            words.append(f"w{n}_{i}")
            starts.append(i == 0)
    return Doc(spacy.blank("en").vocab, words=words, sent_starts=starts)


def sent_bounds(doc):
    return [(s.start, s.end) for s in doc.sents]


def test_registered_by_entry_point():
    getter = registry.span_getters.get("spacy_rhetoric.sentence_windows.v1")(max_tokens=8)
    doc = make_doc([3, 4, 2])
    assert [(w.start, w.end) for w in getter([doc])[0]] == [(0, 7), (7, 9)]


def test_packs_whole_sentences_and_covers_every_token():
    lengths = [5, 7, 3, 9, 2, 6, 4]
    doc = make_doc(lengths)
    windows = sentence_windows(doc, max_tokens=12)
    # sentence starts 0 5 12 15 24 26 32 (end 36): 5+7 | 3+9 | 2+6+4
    assert [(w.start, w.end) for w in windows] == [(0, 12), (12, 24), (24, 36)]
    starts = {s for s, _ in sent_bounds(doc)} | {len(doc)}
    for w in windows:
        assert len(w) <= 12
        assert w.start in starts and w.end in starts  # no sentence is split
    assert [t for w in windows for t in range(w.start, w.end)] == list(range(len(doc)))


def test_a_short_doc_is_one_window():
    doc = make_doc([6, 8, 5])
    assert [(w.start, w.end) for w in sentence_windows(doc, max_tokens=256)] == [(0, 19)]


def test_long_sentence_is_cut_into_max_token_pieces():
    doc = make_doc([3, 25, 2])
    windows = sentence_windows(doc, max_tokens=10)
    assert [(w.start, w.end) for w in windows] == [(0, 3), (3, 13), (13, 23), (23, 30)]
    assert all(len(w) <= 10 for w in windows)


def test_overlap_repeats_whole_preceding_sentences():
    doc = make_doc([4, 3, 5, 6, 2])
    windows = sentence_windows(doc, max_tokens=10, overlap=5)
    got = [(w.start, w.end) for w in windows]
    # sentence starts 0 4 7 12 18 (end 20). New material: (0,7) | (7,12), since 5+6 > 10 |
    # (12,20). Context: the 3-token sentence (4,7) fits before (7,12); before (12,20) the
    # 5-token sentence (7,12) is within the overlap but would make the window 13 > 10 tokens.
    assert got == [(0, 7), (4, 12), (12, 20)]
    starts = {s for s, _ in sent_bounds(doc)}
    for w in windows:
        assert len(w) <= 10 and w.start in starts
    covered = {t for w in windows for t in range(w.start, w.end)}
    assert covered == set(range(len(doc)))


def test_doc_without_boundaries_and_empty_doc():
    vocab = spacy.blank("en").vocab
    doc = Doc(vocab, words=[f"w{i}" for i in range(7)])
    assert [(w.start, w.end) for w in sentence_windows(doc, max_tokens=3)] == [(0, 3), (3, 6), (6, 7)]
    assert sentence_windows(Doc(vocab, words=[]), max_tokens=3) == []


@pytest.mark.parametrize("max_tokens,overlap", [(0, 0), (10, 10), (10, -1)])
def test_bad_settings_are_rejected(max_tokens, overlap):
    make = registry.span_getters.get("spacy_rhetoric.sentence_windows.v1")
    with pytest.raises(ValueError, match="sentence_windows"):
        make(max_tokens=max_tokens, overlap=overlap)


def test_transformer_pipe_runs_with_sentence_windows(tmp_path):
    pytest.importorskip("torch").set_num_threads(1)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("transformer", config={"model": {
        "@architectures": "spacy_rhetoric.ChunkedTransformerModel.v1",
        "name": resolve_hf_model("sentence-transformers/all-MiniLM-L6-v2"),
        "max_windows_per_pass": 2,
        "get_spans": {"@span_getters": "spacy_rhetoric.sentence_windows.v1", "max_tokens": 30},
        "tokenizer_config": {"use_fast": True},
    }})
    nlp.initialize()
    text = " ".join(f"Sentence {i} states the aim of the study in a few words." for i in range(6))
    doc = nlp(text)
    trf = doc._.trf_data
    # six 13-token sentences, 30-token budget: two whole sentences per window
    assert [len(s) for s in doc.sents] == [13] * 6
    assert len(trf.wordpieces) == 3
    assert trf.align.lengths.min() > 0  # every token got word pieces
    nlp.to_disk(tmp_path / "p")
    doc2 = spacy.load(tmp_path / "p")(text)
    assert len(doc2._.trf_data.wordpieces) == 3
