"""rhetoric_phrase_labeler and readers.phrases."""
import json

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.vocab import Vocab

import spacy_rhetoric  # noqa: F401  (installs the extensions)
from spacy_rhetoric.extensions import set_sent_labels
from spacy_rhetoric.pipeline.phrase_labeler import PhraseLabeler, score_phrase_labels
from spacy_rhetoric.pipeline.phrase_table import build_ngram_table, split_placeholders
from spacy_rhetoric.readers.phrases import PhraseFormatError, read_phrases

AIM = "In this paper, we propose a novel method for parsing."  # root: propose (5)
OUTLINE = "The rest of this paper is organized as follows."  # root: organized (6)
TABLE = "Table 2 shows the results."  # root: shows (2)


def make_labeler(nlp, phrases, **cfg):
    """A labeler outside ``nlp`` (the shared en_parser fixture stays untouched)."""
    labeler = PhraseLabeler(nlp.vocab, **cfg)
    labeler.initialize(phrases=phrases, nlp=nlp)
    return labeler


def sent_of(doc):
    sents = list(doc.sents)
    assert len(sents) == 1, [s.text for s in sents]
    return sents[0]


# ----------------------------------------------------------------- root rule
def test_root_rule_labels_only_matches_holding_the_root(en_parser):
    labeler = make_labeler(
        en_parser,
        [("Aim", "we propose a novel method"), ("Outline", "the rest of this paper")],
    )
    aim = en_parser(AIM)
    outline = en_parser(OUTLINE)
    # The sentences are built so that the roots sit where the rule needs them.
    assert sent_of(aim).root.i == 5 and aim[5].text == "propose"
    assert sent_of(outline).root.i == 6 and outline[6].text == "organized"
    labeler(aim)
    labeler(outline)
    s = sent_of(aim)
    assert s._.phrase_label == "Aim"
    assert (s._.phrase_match.start, s._.phrase_match.end) == (4, 9)
    assert s._.phrase_match.text == "we propose a novel method"
    assert s._.phrase_match.start <= s.root.i < s._.phrase_match.end
    # "the rest of this paper" occurs (tokens 0-4) but does not hold the root.
    assert outline[0:5].text == "The rest of this paper"
    s = sent_of(outline)
    assert s._.phrase_label is None and s._.phrase_match is None


def test_root_rule_on_handmade_parse_with_two_sentences():
    """The rule uses each sentence's own root, on a parse given by hand."""
    vocab = spacy.blank("en").vocab
    words = ["we", "propose", "a", "new", "method", ".", "a", "new", "method", "we", "propose", "."]
    heads = [1, 1, 4, 4, 1, 1, 8, 8, 8, 10, 8, 8]
    deps = ["nsubj", "ROOT", "det", "amod", "dobj", "punct", "det", "amod", "ROOT", "nsubj", "relcl", "punct"]
    doc = Doc(vocab, words=words, heads=heads, deps=deps, lemmas=words)
    s1, s2 = list(doc.sents)
    assert (s1.root.i, s2.root.i) == (1, 8)
    labeler = PhraseLabeler(vocab, attr="LOWER", n=3)
    labeler.initialize(phrases=[("Aim", "we propose a")])
    labeler(doc)
    s1, s2 = list(doc.sents)
    assert s1._.phrase_label == "Aim" and s1._.phrase_match.text == "we propose a"
    # "we propose" + "." in sentence 2 never forms the n-gram; and no window holds root 8.
    assert s2._.phrase_label is None


def test_root_match_at_sentence_edges_and_not_across_sentences(en_parser):
    labeler = make_labeler(en_parser, [("Ref", "table 2 shows")], n=5)
    doc = en_parser(TABLE + " " + OUTLINE)
    labeler(doc)
    first, second = list(doc.sents)
    assert first.root.i == 2
    assert first._.phrase_label == "Ref" and first._.phrase_match.text == "Table 2 shows"
    assert second._.phrase_label is None


# ----------------------------------------------------- table construction
def test_multilabel_ngrams_are_dropped(en_parser):
    pairs = [("A", "we propose a novel method"), ("B", "we propose a novel method for parsing")]
    table, stats = build_ngram_table(pairs, nlp=en_parser, n=5)
    assert ("we", "propose", "a", "novel", "method") not in table
    assert stats["ngrams_multilabel"] == 1
    assert table[("propose", "a", "novel", "method", "for")] == "B"
    assert stats["ngrams_listed"] == stats["ngrams"] + stats["ngrams_multilabel"]
    labeler = make_labeler(en_parser, pairs)
    assert labeler.stats["ngrams_multilabel"] == 1
    doc = labeler(en_parser(AIM))
    s = sent_of(doc)
    assert s._.phrase_label == "B"
    assert s._.phrase_match.text == "propose a novel method for"


def test_same_phrase_under_two_labels_drops_all_its_ngrams(en_parser):
    table, stats = build_ngram_table(
        [("A", "table 2 shows the"), ("B", "table 2 shows the")], nlp=en_parser
    )
    assert table == {} and stats["ngrams_multilabel"] == 1


def test_phrases_are_lemmatized_with_the_pipeline(en_parser):
    table, _ = build_ngram_table([("Ref", "results are shown in table")], nlp=en_parser)
    assert list(table) == [("result", "be", "show", "in", "table")]
    labeler = make_labeler(en_parser, [("Ref", "results are shown in table")])
    doc = labeler(en_parser("The result is shown in Table 4."))
    assert sent_of(doc)._.phrase_label == "Ref"


def test_keep_short(en_parser):
    phrases = [("Ref", "table 2 shows")]
    kept = make_labeler(en_parser, phrases, keep_short=True)
    assert sent_of(kept(en_parser(TABLE)))._.phrase_label == "Ref"
    dropped = make_labeler(en_parser, phrases + [("Aim", "we propose a novel method")], keep_short=False)
    assert dropped.stats["segments_too_short"] == 1
    assert all(len(k) == 5 for k in dropped.table)
    assert sent_of(dropped(en_parser(TABLE)))._.phrase_label is None
    # min_length: one-word segments are never kept.
    table, stats = build_ngram_table([("X", "shows")], nlp=en_parser, min_length=2)
    assert table == {} and stats["segments_too_short"] == 1


def test_n_is_configurable(en_parser):
    phrases = [("Outline", "the rest of this paper is organized as follows")]
    three = make_labeler(en_parser, phrases, n=3)
    assert {len(k) for k in three.table} == {3}
    s = sent_of(three(en_parser(OUTLINE)))
    assert s._.phrase_label == "Outline"
    # Longest rule among equal lengths -> earliest 3-gram holding the root (6).
    assert (s._.phrase_match.start, s._.phrase_match.end) == (4, 7)
    seven = make_labeler(en_parser, phrases, n=7)
    assert {len(k) for k in seven.table} == {7}
    s = sent_of(seven(en_parser(OUTLINE)))
    assert (s._.phrase_match.start, s._.phrase_match.end) == (0, 7)


def test_placeholders_split_phrases():
    assert split_placeholders("have been proposed cite- cite-", ["*", "cite-"]) == ["have been proposed"]
    assert split_placeholders("is * upon work supported", ["*"]) == ["is", "upon work supported"]
    table, stats = build_ngram_table(
        [("Ack", "this paper is * upon work supported in part by")], nlp=None, attr="LOWER"
    )
    assert ("upon", "work", "supported", "in", "part") in table
    assert not any("*" in k for k in table)
    assert stats["segments"] == 2 and stats["segments_too_short"] == 0  # "this paper is" kept whole


def test_tie_rule_is_deterministic(en_parser):
    # Two qualifying n-grams of different lengths: the longer wins.
    longer = [("Short", "paper is organized"), ("Long", "this paper is organized as")]
    # Same length: the earlier start wins, whatever the input order.
    same = [("Later", "is organized as"), ("Earlier", "paper is organized")]
    for pairs in (longer, list(reversed(longer))):
        s = sent_of(make_labeler(en_parser, pairs)(en_parser(OUTLINE)))
        assert s._.phrase_label == "Long" and s._.phrase_match.text == "this paper is organized as"
    for pairs in (same, list(reversed(same))):
        s = sent_of(make_labeler(en_parser, pairs)(en_parser(OUTLINE)))
        assert s._.phrase_label == "Earlier" and (s._.phrase_match.start, s._.phrase_match.end) == (4, 7)


def test_overwrite_false_keeps_existing_labels(en_parser):
    first = make_labeler(en_parser, [("First", "table 2 shows")])
    second = make_labeler(en_parser, [("Second", "2 shows the")], overwrite=False)
    doc = first(en_parser(TABLE + " " + AIM))
    doc = second(doc)
    s = list(doc.sents)[0]
    assert s._.phrase_label == "First" and s._.phrase_match.text == "Table 2 shows"
    replacing = make_labeler(en_parser, [("Second", "2 shows the")], overwrite=True)
    s = list(replacing(doc).sents)[0]
    assert s._.phrase_label == "Second" and s._.phrase_match.text == "2 shows the"


# ----------------------------------------------------------- in a pipeline
@pytest.fixture(scope="module")
def labeled_nlp(tmp_path_factory, shared_data):
    from spacy_rhetoric.util import load_parser

    nlp = load_parser("en_core_web_sm", exclude=["ner"])
    labeler = nlp.add_pipe("rhetoric_phrase_labeler", config={"n": 5})
    # No nlp= here: the pipe lemmatizes with the pipeline it was added to.
    labeler.initialize(phrases=str(shared_data / "iwatsuki2021-fe-database-cl"))
    return nlp


TEXT = (
    "In this paper, we propose a novel method for parsing. Table 2 shows the results of our "
    "experiments. The rest of this paper is organized as follows. In future work, we plan to "
    "extend this approach to other languages. Dogs bark."
)


def labels_of(doc):
    return [
        (s._.phrase_label, None if s._.phrase_match is None else s._.phrase_match.text)
        for s in doc.sents
    ]


def test_iwatsuki_database_labels_sentences(labeled_nlp):
    labeler = labeled_nlp.get_pipe("rhetoric_phrase_labeler")
    assert labeler.stats["phrases"] == 7520 and len(labeler.labels) == 31
    assert labeler.stats["ngrams_multilabel"] > 0
    got = labels_of(labeled_nlp(TEXT))
    assert got[1] == ("Reference to tables or figures", "Table 2 shows the results")
    assert got[3][0] == "Suggestion of future work"
    assert got[4] == (None, None)


def test_to_disk_spacy_load_round_trip(labeled_nlp, tmp_path):
    expected = labels_of(labeled_nlp(TEXT))
    assert any(label for label, _ in expected)
    labeled_nlp.to_disk(tmp_path / "pipe")
    assert (tmp_path / "pipe" / "rhetoric_phrase_labeler" / "ngrams.jsonl").exists()
    loaded = spacy.load(tmp_path / "pipe")
    assert loaded.get_pipe("rhetoric_phrase_labeler").table == labeled_nlp.get_pipe(
        "rhetoric_phrase_labeler"
    ).table
    assert labels_of(loaded(TEXT)) == expected


def test_to_bytes_round_trip(labeled_nlp):
    labeler = labeled_nlp.get_pipe("rhetoric_phrase_labeler")
    other = PhraseLabeler(labeled_nlp.vocab, n=3, keep_short=False).from_bytes(labeler.to_bytes())
    assert other.table == labeler.table and other.cfg == labeler.cfg and other.stats == labeler.stats


def test_docbin_round_trip(labeled_nlp):
    docs = list(labeled_nlp.pipe([TEXT, AIM + " " + TABLE]))
    expected = [labels_of(d) for d in docs]
    data = DocBin(docs=docs, store_user_data=True).to_bytes()
    restored = list(DocBin(store_user_data=True).from_bytes(data).get_docs(Vocab()))
    assert [labels_of(d) for d in restored] == expected


def test_initialize_from_config(tmp_path):
    path = tmp_path / "phrases.tsv"
    path.write_text("Aim\twe propose a\t3\n", encoding="utf8")
    nlp = spacy.blank("en")
    nlp.add_pipe("rhetoric_phrase_labeler", config={"attr": "LOWER", "n": 3})
    nlp.config["initialize"]["components"]["rhetoric_phrase_labeler"] = {"phrases": str(path)}
    nlp.initialize()
    assert nlp.get_pipe("rhetoric_phrase_labeler").table == {("we", "propose", "a"): "Aim"}


# ------------------------------------------------------------------ scorer
def test_scorer_on_handmade_case(labeled_nlp):
    text = TABLE + " " + OUTLINE + " Dogs bark."
    reference = labeled_nlp.make_doc(text)
    for i, token in enumerate(reference):
        token.is_sent_start = i in (0, 6, 16)
    assert [s.text for s in reference.sents] == [TABLE, OUTLINE, "Dogs bark."]
    set_sent_labels(reference, ["Reference to tables or figures", "Showing the aim of the paper", None])
    predicted = labeled_nlp(text)
    got = labels_of(predicted)
    assert [g[0] for g in got] == [
        "Reference to tables or figures",
        "Showing the outline of the paper",
        None,
    ]
    scores = score_phrase_labels([Example(predicted, reference)])
    assert scores["phrase_coverage"] == pytest.approx(2 / 3)
    assert scores["phrase_precision"] == pytest.approx(1 / 2)
    assert scores["phrase_per_type"]["Reference to tables or figures"] == {"n": 1, "p": 1.0}
    assert scores["phrase_per_type"]["Showing the outline of the paper"] == {"n": 1, "p": 0.0}
    # Through nlp.evaluate (registered scorer, default_score_weights keys).
    evaluated = labeled_nlp.evaluate([Example(labeled_nlp.make_doc(text), reference)])
    assert evaluated["phrase_coverage"] == pytest.approx(2 / 3)
    assert evaluated["phrase_precision"] == pytest.approx(1 / 2)
    # Without gold labels there is no precision, only coverage.
    no_gold = score_phrase_labels([Example(predicted, labeled_nlp.make_doc(text))])
    assert "phrase_precision" not in no_gold and no_gold["phrase_coverage"] == pytest.approx(2 / 3)


# --------------------------------------------------------------- errors
def test_blank_pipeline_errors_are_clear(tmp_path):
    nlp = spacy.blank("en")
    labeler = nlp.add_pipe("rhetoric_phrase_labeler")
    with pytest.raises(ValueError, match="needs a phrase list"):
        nlp.initialize()
    with pytest.raises(ValueError, match="lemmatizer"):
        labeler.initialize(phrases=[("Aim", "we propose a")], nlp=nlp)
    with pytest.raises(ValueError, match="not initialized"):
        nlp("We propose a method.")
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    labeler = nlp.add_pipe("rhetoric_phrase_labeler", config={"attr": "LOWER"})
    labeler.initialize(phrases=[("Aim", "we propose a")], nlp=nlp)
    with pytest.raises(ValueError, match="needs a dependency parse"):
        nlp("We propose a method.")
    with pytest.raises(ValueError, match="attr must be one of"):
        spacy.blank("en").add_pipe("rhetoric_phrase_labeler", config={"attr": "POS"})
    with pytest.raises(ValueError, match=r"phrases\[1\]"):
        labeler.initialize(phrases=[("Aim", "we propose a"), ("no phrase",)], nlp=nlp)


# ------------------------------------------------------------ read_phrases
def test_read_phrases_iwatsuki_dir(shared_data):
    directory = shared_data / "iwatsuki2021-fe-database-cl"
    pairs, skipped = read_phrases(directory)
    assert len(pairs) == 7520 and skipped == 0
    assert len({label for label, _ in pairs}) == 31
    assert ("Reference to tables or figures", "table 2 shows the") in pairs
    intro, _ = read_phrases(directory / "CL.introduction")
    assert len(intro) == 1617


def test_read_phrases_malformed_lines(tmp_path, caplog):
    path = tmp_path / "phrases.tsv"
    path.write_bytes(
        b"label\tphrase\tcount\n"  # header, not a record
        b"Aim\twe propose a\t3\n"
        b"only one field\n"  # line 3
        b"Aim\ta\tb\tc\n"  # line 4
        b"Aim\twe present a\tmany\n"  # line 5
        b"\tno label\t2\n"  # line 6
        b"\n"
        b"Ref\ttable 2  shows\n"  # no count; inner spaces normalised
        b"Ref\t\xff\xfe bad\t1\n"  # line 9, not UTF-8
    )
    pairs, skipped = read_phrases(path)
    assert pairs == [("Aim", "we propose a"), ("Ref", "table 2 shows")]
    assert skipped == 5
    assert f"{path}:3" in caplog.text
    with pytest.raises(PhraseFormatError, match=rf"{path}:3: expected 'label<TAB>phrase"):
        read_phrases(path, strict=True)
    bad_count = tmp_path / "bad.tsv"
    bad_count.write_text("Aim\twe propose a\t-1\n", encoding="utf8")
    with pytest.raises(PhraseFormatError, match=r"bad.tsv:1: count must be"):
        read_phrases(bad_count, strict=True)
    with pytest.raises(FileNotFoundError):
        read_phrases(tmp_path / "missing.tsv")


def test_read_phrases_cfs3_json(tmp_path):
    ngram_to_label = tmp_path / "5gram_dict.json"
    ngram_to_label.write_text(
        json.dumps(
            {
                "play a vital role in": "01",
                "('have', 'become', 'a', 'central', 'issue')": 1,
                "be the aim of this": ["05", "06"],
                "": "02",
            }
        ),
        encoding="utf8",
    )
    pairs, skipped = read_phrases(ngram_to_label)
    assert pairs == [
        ("01", "play a vital role in"),
        ("01", "have become a central issue"),
        ("05", "be the aim of this"),
        ("06", "be the aim of this"),
    ]
    assert skipped == 1
    label_to_ngrams = tmp_path / "by_label.json"
    label_to_ngrams.write_text(json.dumps({"01": ["play a vital role in"], "48": [["table", "2", "show", "the", "result"]]}))
    pairs, skipped = read_phrases(label_to_ngrams)
    assert pairs == [("01", "play a vital role in"), ("48", "table 2 show the result")] and skipped == 0
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": "01",\n "b": }')
    with pytest.raises(PhraseFormatError, match=r"broken.json:2: invalid JSON"):
        read_phrases(broken)
    # The labeler takes the JSON directly; the ambiguous n-gram is dropped.
    labeler = PhraseLabeler(spacy.blank("en").vocab, attr="LOWER")
    labeler.initialize(phrases=str(ngram_to_label))
    assert set(labeler.table.values()) == {"01"} and labeler.stats["ngrams_multilabel"] == 1


def brute_force(sent, table, key):
    """Every listed n-gram in the sentence, kept if it holds the root, then
    the documented tie rule (longest, earliest, label)."""
    keys = [key(t) for t in sent]
    found = []
    for length in {len(k) for k in table}:
        for i in range(len(keys) - length + 1):
            label = table.get(tuple(keys[i : i + length]))
            start, end = sent.start + i, sent.start + i + length
            if label is not None and start <= sent.root.i < end:
                found.append((-length, start, label, end))
    if not found:
        return None
    length, start, label, end = min(found)
    return label, start, end


def test_root_anchored_lookup_equals_brute_force(labeled_nlp, shared_data):
    from spacy_rhetoric.readers.clscisumm import read_reference_xml, reference_doc

    xml = shared_data / "cl-scisumm" / "training-40-manual" / "C00-2123" / "Reference_XML" / "C00-2123.xml"
    paper = read_reference_xml(xml)
    doc = labeled_nlp(reference_doc(labeled_nlp, paper))
    labeler = labeled_nlp.get_pipe("rhetoric_phrase_labeler")
    table = labeler.table
    key = lambda t: t.lemma_.lower()  # noqa: E731
    n_labeled = 0
    for sent in doc.sents:
        expected = brute_force(sent, table, key)
        got = None
        if sent._.phrase_label is not None:
            got = (sent._.phrase_label, sent._.phrase_match.start, sent._.phrase_match.end)
            n_labeled += 1
        assert got == expected, sent.text
    assert n_labeled > 5


def test_labeler_pickles():
    import pickle

    nlp = spacy.blank("en")
    labeler = nlp.add_pipe("rhetoric_phrase_labeler", config={"attr": "LOWER", "n": 3})
    labeler.initialize(phrases=[("Aim", "we propose a")])
    copy = pickle.loads(pickle.dumps(labeler))
    assert copy.table == labeler.table and copy.cfg == labeler.cfg
    nlp_copy = pickle.loads(pickle.dumps(nlp))
    assert nlp_copy.get_pipe("rhetoric_phrase_labeler").table == labeler.table
