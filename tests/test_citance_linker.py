"""Tests of the CitRet citance linker (spacy_rhetoric.citret + rhetoric_citance_linker)."""
import json
import re

import numpy
import pytest
import spacy
from helpers import cli_text
from spacy.tokens import DocBin

import spacy_rhetoric  # extensions; the package root for the source checks
from spacy_rhetoric import extensions as ext
from spacy_rhetoric.citret.denoise import common_components, denoise, remove_common_components
from spacy_rhetoric.citret.evaluation import Task1aScore, merge_annotators
from spacy_rhetoric.citret.pairs import PaperCitances, build_pairs, paper_citances_from_topic
from spacy_rhetoric.citret.scoring import CitRetScorer, CitRetSettings
from spacy_rhetoric.citret.text import append_keywords, preprocess, shared_ngrams
from spacy_rhetoric.citret.wmd import save_vectors, train_word2vec, wmd_distances, wmd_similarities
from spacy_rhetoric.readers.clscisumm import iter_topics, read_annotations
from spacy_rhetoric.readers.common import doc_from_sentences


# ---------------------------------------------------------------- helpers
class BagOfWordsEncoder:
    """A stand-in encoder: mean of one-hot word vectors over a fixed vocabulary
    (the mean pooling of SBERT on a toy embedding table), recording its inputs."""

    def __init__(self, vocab):
        self.vocab = {w: i for i, w in enumerate(vocab)}
        self.seen = []

    def encode(self, texts, batch_size=32):
        out = numpy.zeros((len(texts), len(self.vocab)), dtype="float32")
        for i, text in enumerate(texts):
            self.seen.append(text)
            words = [w for w in text.split() if w in self.vocab]
            for w in words:
                out[i, self.vocab[w]] += 1.0 / len(words)
        return out


def _tiny_kv():
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=2)
    kv.add_vectors(["alpha", "beta", "gamma", "delta"],
                   numpy.array([[1, 0], [0, 2], [-1, 0], [0.6, 0.8]], dtype="float32"))
    return kv


@pytest.fixture(scope="module")
def tiny_encoder_dir(tmp_path_factory):
    """A tiny randomly initialised BERT (no dropout) with MiniLM's tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from spacy_rhetoric.util import resolve_hf_model

    path = tmp_path_factory.mktemp("tiny_bert")
    tok = AutoTokenizer.from_pretrained(resolve_hf_model("sentence-transformers/all-MiniLM-L6-v2"))
    import torch

    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    BertModel(config).save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path


TOY_REFERENCE = [
    "We present a maximum entropy model for part of speech tagging.",
    "The tagger reaches high accuracy on the Wall Street Journal corpus.",
    "Dynamic programming search is used for statistical machine translation.",
    "Word alignment models are trained with the EM algorithm.",
    "Our parser builds dependency trees in linear time.",
]


def _toy_nlp(encoder_dir, kv_path=None, use_wmd=False):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    config = {"model_name": str(encoder_dir), "use_wmd": use_wmd, "max_length": 32}
    if kv_path is not None:
        config["vectors_path"] = str(kv_path)
    linker = nlp.add_pipe("rhetoric_citance_linker", config=config)
    return nlp, linker


# ----------------------------------------------------------- pre-processing
def test_preprocess_lowercases_and_drops_stop_words_and_special_characters():
    assert preprocess("The Maximum-Entropy model (Ratnaparkhi, 1996) is used!") == [
        "maximum", "entropy", "model", "ratnaparkhi", "1996"]


def test_shared_ngrams():
    a = preprocess("We use a maximum entropy model for tagging")
    b = preprocess("A maximum entropy model tags words")
    assert shared_ngrams(a, b, 2) == ["maximum entropy", "entropy model"]
    assert shared_ngrams(a, b, 3) == ["maximum entropy model"]
    assert shared_ngrams(a, ["unrelated", "words"], 2) == []
    assert append_keywords("x y", ["a b"]) == "x y a b"
    assert append_keywords("x y", []) == "x y"


# ------------------------------------------------------------- pair builder
def test_pair_builder_on_real_annotation_files(shared_data):
    root = shared_data / "cl-scisumm" / "training-40-manual"
    topics = [t for t in iter_topics(root) if t.topic_id in ("C00-2123", "C02-1025", "C04-1089")]
    papers = [paper_citances_from_topic(t) for t in topics]
    pairs, stats = build_pairs(papers, seed=3)
    assert stats.citances == stats.used + stats.n_skipped
    assert stats.citances == sum(len(p.records) for p in papers) > 0
    texts = [set(p.sentences.values()) for p in papers]
    i = 0
    for pi, paper in enumerate(papers):
        for rec in paper.records:
            gold = [s for s in dict.fromkeys(rec.reference_offsets) if s in paper.sentences]
            if not rec.citation_text.strip() or not gold:
                continue
            group = pairs[i : i + len(gold) + 4]
            i += len(gold) + 4
            assert all(p[0] == rec.citation_text for p in group)
            assert [(p[1], p[2]) for p in group[: len(gold)]] == [(paper.sentences[s], 1.0) for s in gold]
            others = group[len(gold) : len(gold) + 2]
            same = group[len(gold) + 2 :]
            assert [p[2] for p in others] == [0.0, 0.0] and [p[2] for p in same] == [0.3, 0.3]
            other_texts = set().union(*(t for j, t in enumerate(texts) if j != pi))
            assert all(p[1] in other_texts for p in others)
            gold_texts = {paper.sentences[s] for s in gold}
            assert all(p[1] in texts[pi] and p[1] not in gold_texts for p in same)
            assert same[0][1] != same[1][1]
    assert i == len(pairs)
    assert stats.pairs[1.0] + stats.pairs[0.3] + stats.pairs[0.0] == len(pairs)
    # seeded: same seed same pairs, another seed other negatives
    assert build_pairs(papers, seed=3)[0] == pairs
    assert build_pairs(papers, seed=4)[0] != pairs


def test_pair_builder_skips_and_counts_unusable_citances():
    class Rec:
        def __init__(self, text, offsets):
            self.citation_text, self.reference_offsets = text, offsets

    a = PaperCitances("A", {"1": "alpha one", "2": "alpha two", "3": "alpha three"},
                      [Rec("cites alpha", ["2"]), Rec("", ["1"]), Rec("cites nothing", ["99"])])
    b = PaperCitances("B", {"1": "beta one"}, [])
    pairs, stats = build_pairs([a, b], seed=0)
    assert stats.citances == 3 and stats.used == 1 and stats.n_skipped == 2
    assert stats.skipped == {"empty citation text": 1, "no gold sentence in the reference paper": 1}
    assert pairs[0] == ("cites alpha", "alpha two", 1.0)
    assert pairs[1:3] == [("cites alpha", "beta one", 0.0)] * 2
    assert sorted(p[1] for p in pairs[3:]) == ["alpha one", "alpha three"]


def test_malformed_annotation_lines_are_skipped_and_counted(tmp_path):
    good = ("Citance Number: 1 | Reference Article:  X.xml | Citing Article:  Y.xml | "
            "Citation Marker Offset:  ['3'] | Citation Marker:  Z | Citation Offset:  ['3'] | "
            "Citation Text:  <S sid =\"3\" ssid = \"1\">We follow Z.</S> | Reference Offset:  ['5'] | "
            "Reference Text:  <S sid =\"5\" ssid = \"2\">Z text.</S> | Discourse Facet:  Method_Citation | "
            "Annotator:  A |")
    bad = "Citance Number: 2 | Reference Article:  X.xml | Citing Article:  Y.xml | Citation Text: oops |"
    path = tmp_path / "X.ann.txt"
    path.write_text(good + "\n\n" + bad + "\n" + good.replace("Annotator:  A", "Annotator:  B") + "\n")
    records, skipped = read_annotations(path)
    assert len(records) == 2 and skipped == 1
    merged = merge_annotators(records)  # the two annotators' records of one citance
    assert len(merged) == 1 and merged[0].gold == {"5"} and merged[0].text == "We follow Z."


# ----------------------------------------------------- task 1a evaluation
def test_task1a_scores_by_hand():
    score = Task1aScore()
    score.add(["1", "2", "3"], {"2", "5"})  # tp 1
    score.add(["7", "8", "9"], {"8", "9", "10", "11"})  # tp 2
    assert (score.tp, score.n_pred, score.n_gold) == (3, 6, 6)
    assert score.precision == pytest.approx(0.5) and score.recall == pytest.approx(0.5)
    assert score.f1 == pytest.approx(0.5)
    score.add(["4"], {"4"})
    assert score.precision == pytest.approx(4 / 7) and score.recall == pytest.approx(4 / 7)


# ------------------------------------------------ common component removal
def test_common_component_removal_axis_aligned():
    A = numpy.array([[3.0, 0, 0], [0, 2.0, 0], [0, 0, 1.0]])
    comps, weights = common_components(A, m=2)
    assert weights == pytest.approx([9 / 13, 4 / 13])  # σ² / Σσ² over the first m
    v = numpy.array([1.0, 1.0, 1.0])
    assert remove_common_components(v, comps, weights) == pytest.approx([4 / 13, 9 / 13, 1.0])
    assert denoise(v, A, m=3) == pytest.approx([5 / 14, 10 / 14, 13 / 14])


def test_common_component_removal_rotated():
    A = numpy.array([[2.0, 2.0], [1.0, -1.0]])  # pcs (1,1)/√2 with σ=2√2, (1,-1)/√2 with σ=√2
    assert denoise(numpy.array([1.0, 0.0]), A, m=1) == pytest.approx([0.5, -0.5])
    # λ = 8/10, 2/10: v − .8·(.5,.5) − .2·(.5,−.5)
    out = denoise(numpy.array([[1.0, 0.0], [0.0, 0.0]]), A, m=2)
    assert out[0] == pytest.approx([0.5, -0.3]) and out[1] == pytest.approx([0.0, 0.0])


# ------------------------------------------------- weighted contextual emb.
def test_weighted_contextual_embeddings_by_hand():
    enc = BagOfWordsEncoder(["maximum", "entropy", "model", "tagger", "parsing"])
    candidates = ["A maximum entropy tagger.", "Parsing."]
    plain = CitRetScorer(enc, settings=CitRetSettings(use_wce=False, use_denoising=False, use_wmd=False))
    ref = plain.prepare(candidates)
    # counts (1,1,1,0,0) vs (1,1,0,1,0): cos = 2/3
    assert plain.score("The maximum entropy model", ref)["score"] == pytest.approx([2 / 3, 0.0], abs=1e-6)
    wce = CitRetScorer(enc, settings=CitRetSettings(use_wce=True, use_denoising=False, use_wmd=False))
    enc.seen.clear()
    scores = wce.score("The maximum entropy model", ref)["score"]
    # shared bigram "maximum entropy" appended to both: (2,2,1,0,0) vs (2,2,0,1,0): cos = 8/9
    assert scores == pytest.approx([8 / 9, 0.0], abs=1e-6)
    assert "maximum entropy tagger maximum entropy" in enc.seen
    assert "maximum entropy model maximum entropy" in enc.seen
    assert not any(s.startswith("parsing ") for s in enc.seen)  # no shared n-gram: no re-encoding


def test_denoising_inside_the_scorer_matches_the_formula():
    enc = BagOfWordsEncoder(["maximum", "entropy", "model", "tagger", "parsing"])
    s = CitRetScorer(enc, settings=CitRetSettings(use_wce=False, use_denoising=True, n_components=1,
                                                  use_wmd=False))
    ref = s.prepare(["maximum entropy tagger", "parsing"])
    q = enc.encode(["maximum entropy model"])[0]
    A = numpy.vstack([ref.vectors, q[None, :]])
    C, Q = denoise(ref.vectors, A, m=1), denoise(numpy.repeat(q[None, :], 2, 0), A, m=1)
    expected = (C * Q).sum(1) / numpy.maximum(numpy.linalg.norm(C, axis=1) * numpy.linalg.norm(Q, axis=1), 1e-12)
    assert s.score("maximum entropy model", ref)["contextual"] == pytest.approx(expected)


# ------------------------------------------------------------------- WMD
def test_wmd_on_hand_made_vectors():
    kv = _tiny_kv()  # gensim's wmdistance uses unit-normalised vectors: beta (0,2) -> (0,1)
    # one word each: the distance between the two (normalised) vectors
    assert wmd_distances(kv, ["alpha"], [["beta"]])[0] == pytest.approx(2 ** 0.5, abs=1e-5)
    # half of the mass stays (alpha->alpha), half moves beta->gamma (distance √2)
    assert wmd_distances(kv, ["alpha", "beta"], [["alpha", "gamma"]])[0] == pytest.approx(0.5 * 2 ** 0.5, abs=1e-5)
    sims = wmd_similarities(kv, ["alpha"], [["alpha"], ["delta"], ["gamma"], ["unknown"]])
    # -WMD; a candidate without known words gets the worst finite distance (2.0 to gamma)
    assert sims == pytest.approx([0.0, -(0.8 ** 0.5), -2.0, -2.0], abs=1e-5)
    assert (wmd_similarities(kv, ["unknown"], [["alpha"]]) == 0).all()


def test_wmd_on_a_tiny_trained_word2vec():
    corpus = [preprocess(t) for t in TOY_REFERENCE * 20]
    kv = train_word2vec(corpus, vector_size=8, min_count=1, epochs=5, seed=1)
    query = preprocess(TOY_REFERENCE[3])
    cands = [preprocess(t) for t in TOY_REFERENCE]
    dist = wmd_distances(kv, query, cands)
    assert dist[3] == pytest.approx(0.0, abs=1e-6)
    assert dist[0] == pytest.approx(kv.wmdistance(query, cands[0]))
    assert numpy.argmax(wmd_similarities(kv, query, cands)) == 3


# ---------------------------------------------------------------- linking
@pytest.mark.slow
def test_link_ranking_with_minilm_and_wmd(tmp_path):
    corpus = [preprocess(t) for t in TOY_REFERENCE * 20]
    kv_path = tmp_path / "toy.bin"
    save_vectors(train_word2vec(corpus, vector_size=8, min_count=1, seed=1), kv_path)
    nlp, linker = _toy_nlp("sentence-transformers/all-MiniLM-L6-v2", kv_path, use_wmd=True)
    nlp.initialize()
    ref = doc_from_sentences(nlp, TOY_REFERENCE, sids=["10", "11", "12", "13", "14"])
    links = linker.link("Smith et al. (2000) use a maximum entropy model for POS tagging.", ref, k=3)
    assert [link["sid"] for link in links][0] == "10"
    assert len(links) == 3 and links[0]["score"] >= links[1]["score"] >= links[2]["score"]
    first = list(ref.sents)[0]
    assert (links[0]["start_char"], links[0]["end_char"]) == (first.start_char, first.end_char)
    assert links[0]["score"] == pytest.approx(links[0]["contextual"] + links[0]["non_contextual"])
    links = linker.link("Translation uses a dynamic programming search.", ref, k=1)
    assert [link["sid"] for link in links] == ["12"]


def test_default_config_standalone_and_no_reference_warns():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_citance_linker")
    nlp.initialize()  # loads MiniLM; no vectors and nothing to train them on yet
    with pytest.warns(UserWarning, match="no reference paper"):
        doc = nlp("A citing sentence.")
    assert doc._.citance_links is None


def test_finetune_and_resume_from_checkpoint(tiny_encoder_dir, tmp_path):
    from spacy_rhetoric.citret.encoder import CitRetEncoder, finetune

    pairs = [(TOY_REFERENCE[i], TOY_REFERENCE[j], 1.0 if i == j else 0.3 if abs(i - j) == 1 else 0.0)
             for i in range(5) for j in range(5)]
    full = CitRetEncoder(str(tiny_encoder_dir), max_length=32)
    res = finetune(full, pairs, epochs=2, batch_size=8, learning_rate=1e-3, max_steps=6, seed=0,
                   progress=False)
    assert res["steps"] == 6 and res["pairs"] == 25
    part = CitRetEncoder(str(tiny_encoder_dir), max_length=32)
    ckpt = tmp_path / "ckpt"

    class Interrupted(Exception):
        pass

    def stop_at_5(step, loss):
        if step == 5:
            raise Interrupted

    with pytest.raises(Interrupted):  # killed after step 5; last checkpoint at step 4
        finetune(part, pairs, epochs=2, batch_size=8, learning_rate=1e-3, max_steps=6, seed=0,
                 checkpoint_dir=ckpt, checkpoint_every=2, progress=False, on_step=stop_at_5)
    assert json.loads((ckpt / "trainer_state.json").read_text())["step"] == 4
    # a new process: fresh model, same command -> resumes at step 4
    resumed = CitRetEncoder(str(tiny_encoder_dir), max_length=32)
    res2 = finetune(resumed, pairs, epochs=2, batch_size=8, learning_rate=1e-3, max_steps=6, seed=0,
                    checkpoint_dir=ckpt, progress=False)
    assert res2["steps"] == 6
    for (name, a), (_, b) in zip(full.model.state_dict().items(), resumed.model.state_dict().items()):
        assert numpy.allclose(a.numpy(), b.numpy(), atol=1e-5), name
    fresh = CitRetEncoder(str(tiny_encoder_dir), max_length=32)
    assert not numpy.allclose(fresh.encode(TOY_REFERENCE), full.encode(TOY_REFERENCE))


def test_linker_finetune_then_round_trips(tiny_encoder_dir, tmp_path):
    kv = _tiny_kv()
    kv_path = tmp_path / "hand.bin"
    save_vectors(kv, kv_path)
    nlp, linker = _toy_nlp(tiny_encoder_dir, kv_path, use_wmd=True)
    nlp.initialize()
    stats = linker.finetune([(TOY_REFERENCE[0], TOY_REFERENCE[0], 1.0), (TOY_REFERENCE[0], TOY_REFERENCE[2], 0.0)],
                            batch_size=2, epochs=2, learning_rate=1e-3, progress=False)
    assert stats["steps"] == 2
    ref = linker.set_reference(doc_from_sentences(nlp, TOY_REFERENCE, sids=list("abcde")))
    doc = nlp("We tag words with a maximum entropy model. Translation search is hard.")
    links = doc._.citance_links
    assert len(links) == 2 and links[0]["reference"] == "default"
    assert (links[0]["start_char"], links[0]["end_char"]) == (0, 42)
    assert [len(e["links"]) for e in links] == [3, 3]
    assert set(links[0]["links"][0]) == {"sid", "start_char", "end_char", "score"}
    direct = linker.link(list(doc.sents)[0], ref, k=3)
    assert [l["sid"] for l in direct] == [l["sid"] for l in links[0]["links"]]
    # DocBin round trip of the doc-level output
    docbin = DocBin(store_user_data=True, docs=[doc])
    doc2 = list(DocBin().from_bytes(docbin.to_bytes()).get_docs(nlp.vocab))[0]
    # (DocBin's msgpack gives lists back as tuples: compare the JSON forms)
    assert json.loads(json.dumps(doc2._.citance_links)) == json.loads(json.dumps(links))
    # to_disk / spacy.load: fine-tuned weights, vectors copy, config and reference survive
    nlp.to_disk(tmp_path / "pipeline")
    nlp2 = spacy.load(tmp_path / "pipeline")
    linker2 = nlp2.get_pipe("rhetoric_citance_linker")
    assert (tmp_path / "pipeline" / "rhetoric_citance_linker" / "vectors.bin").exists()
    assert not (tmp_path / "pipeline" / "rhetoric_citance_linker" / "vectors.kv").exists()
    assert linker2.settings == linker.settings and linker2.cfg["max_length"] == 32
    assert numpy.allclose(linker2.encoder.encode(TOY_REFERENCE), linker.encoder.encode(TOY_REFERENCE), atol=1e-6)
    assert linker2.vectors["beta"] == pytest.approx([0.0, 2.0])
    doc3 = nlp2("We tag words with a maximum entropy model. Translation search is hard.")
    assert [[l["sid"] for l in e["links"]] for e in doc3._.citance_links] == \
        [[l["sid"] for l in e["links"]] for e in links]
    assert [l["score"] for e in doc3._.citance_links for l in e["links"]] == pytest.approx(
        [l["score"] for e in links for l in e["links"]])
    # to_bytes / from_bytes (nlp.to_bytes): same weights, vectors, settings and links
    data = linker.to_bytes()
    linker3 = nlp2.get_pipe("rhetoric_citance_linker").__class__(nlp.vocab, model_name=str(tiny_encoder_dir))
    linker3.from_bytes(data)
    assert linker3.settings == linker.settings and linker3.cfg["vectors_path"] == linker.cfg["vectors_path"]
    assert numpy.allclose(linker3.encoder.encode(TOY_REFERENCE), linker.encoder.encode(TOY_REFERENCE), atol=1e-6)
    assert linker3.vectors["beta"] == pytest.approx([0.0, 2.0])
    assert sorted(linker3.references) == sorted(linker.references)
    again = linker3.link(list(doc.sents)[0], linker3.references["default"], k=3)
    assert [l["sid"] for l in again] == [l["sid"] for l in direct]
    with pytest.raises(ValueError, match="from_bytes"):
        linker3.from_bytes(b"\x80")


def test_reference_selection_by_user_data_key_and_citance_pattern(tiny_encoder_dir):
    nlp, linker = _toy_nlp(tiny_encoder_dir)
    nlp.get_pipe("rhetoric_citance_linker").cfg  # noqa: B018
    linker._pattern = re.compile(r"\(\w+,? \d{4}\)")
    nlp.initialize()
    linker.add_reference(TOY_REFERENCE[:2], "p1")
    linker.add_reference(TOY_REFERENCE[2:], "p2")
    doc = nlp.make_doc("No marker here. Search is slow (Och, 2003).")
    doc = nlp.get_pipe("sentencizer")(doc)
    doc.user_data["citance_reference"] = "p2"
    doc = linker(doc)
    (entry,) = doc._.citance_links
    assert entry["reference"] == "p2" and entry["start_char"] == 16
    assert {l["sid"] for l in entry["links"]} <= {"0", "1", "2"}
    assert len(entry["links"]) == 3
    doc.user_data["citance_reference"] = "missing"
    with pytest.raises(KeyError, match="missing"):
        linker(doc)


def test_scorer_task1a_on_examples(tiny_encoder_dir):
    from spacy.training import Example

    from spacy_rhetoric.pipeline.citance_linker import score_citance_links

    nlp = spacy.blank("en")
    pred, gold = nlp.make_doc("x y"), nlp.make_doc("x y")
    ext.set_doc_value(pred, ext.CITANCE_LINKS, [{"start_char": 0, "end_char": 3, "links": [
        {"sid": "1", "start_char": 0, "end_char": 1, "score": 1.0},
        {"sid": "2", "start_char": 0, "end_char": 1, "score": 0.5}]}])
    ext.set_doc_value(gold, ext.CITANCE_LINKS, [{"start_char": 0, "end_char": 3, "links": [
        {"sid": "2", "start_char": 0, "end_char": 1, "score": 1.0},
        {"sid": "3", "start_char": 0, "end_char": 1, "score": 1.0},
        {"sid": "4", "start_char": 0, "end_char": 1, "score": 1.0}]}])
    scores = score_citance_links([Example(pred, gold)])
    assert scores["citance_link_p"] == pytest.approx(0.5)
    assert scores["citance_link_r"] == pytest.approx(1 / 3)
    assert scores["citance_link_f"] == pytest.approx(0.4)


def test_cli_link_plain_text(tiny_encoder_dir, tmp_path):
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app, load_commands

    load_commands()
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(TOY_REFERENCE) + "\n")
    cit = tmp_path / "cit.txt"
    cit.write_text("A maximum entropy tagger.\n\nAlignment with EM.\n")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["link", str(ref), str(cit), "--encoder", str(tiny_encoder_dir),
                                      "--no-wmd", "-k", "2", "--output", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(l) for l in out.read_text().splitlines()]
    assert [l["citance"] for l in lines] == ["A maximum entropy tagger.", "Alignment with EM."]
    assert all(len(l["links"]) == 2 and {x["sid"] for x in l["links"]} <= {"1", "2", "3", "4", "5"} for l in lines)
    result = CliRunner().invoke(app, ["link", str(ref), str(cit), "--encoder", str(tiny_encoder_dir)])
    assert result.exit_code == 1 and "--vectors" in result.output


# ------------------------------------------- citance keying, both protocols
CSV_HEADER = ["Citance Number", "Reference Article", "Citing Article", "Citation Marker Offset",
              "Citation Marker", "Citation Offset", "Citation Text", "Reference Offset", "Reference Text",
              "Discourse Facet"]
TOY_XML = "<PAPER>" + "".join(f'<S sid="{i + 1}" ssid="{i + 1}">{t}</S>' for i, t in enumerate(TOY_REFERENCE)) \
    + "</PAPER>"


def _csv_topic(root, annotators):
    """A topic T01-0001 with one CSV file per annotator: ``{name: [rows]}``,
    rows ``(citance number, citing article, text, gold sids)``; the Citation
    Offset is the placeholder 0 and the Reference Article column is empty."""
    import csv

    topic = root / "T01-0001"
    (topic / "Reference_XML").mkdir(parents=True)
    (topic / "Reference_XML" / "T01-0001.xml").write_text(TOY_XML, encoding="utf8")
    (topic / "annotation").mkdir()
    for name, rows in annotators.items():
        with (topic / "annotation" / f"T01-0001_{name}.csv").open("w", newline="", encoding="utf8") as fh:
            writer = csv.writer(fh)
            writer.writerow(CSV_HEADER)
            for number, citing, text, gold in rows:
                writer.writerow([number, "", citing, "0", "X", "0", text, ",".join(f"'{g}'" for g in gold),
                                 "x", "Method_Citation"])
    return topic


class FixedLinker:
    """Returns sids 1, 2, 3 for every citance (scores 3, 2, 1)."""

    def __init__(self):
        self.seen = []

    def link(self, text, reference, k=3):
        self.seen.append(text)
        return [{"sid": str(i + 1), "score": float(3 - i)} for i in range(k)]


def test_evaluate_keys_citances_by_citing_sentence_not_placeholder_offsets(tmp_path):
    from spacy_rhetoric.citret.corpus import evaluate_topics
    from spacy_rhetoric.readers.clscisumm import select_topics

    # two citances of one citing paper, both with Citation Offset 0; annotator b
    # annotated only the first one; one row has no citation text
    _csv_topic(tmp_path, {
        "a": [("1", "C02-0002", "A maximum entropy tagger.", ["1"]),
              ("2", "C02-0002", "Alignment with EM.", ["4", "5"]),
              ("3", "C02-0002", "", ["2"])],
        "b": [("1", "C02-0002", "A maximum entropy tagger.", ["2"])],
    })
    topics = select_topics([tmp_path])
    linker = FixedLinker()
    result = evaluate_topics(linker, spacy.blank("en"), topics, k=3, progress=False)
    counts = result["counts"]
    # old code: one citance (all rows keyed (C02-0002, ('0',))), the empty-Reference-Article rows skipped
    assert counts["records_read"] == 4 and counts["records_malformed"] == 0
    # the row without citation text, offset placeholder 0, cannot be keyed (issue 24 item 12)
    assert (counts["citances_read"], counts["citances_scored"], counts["citances_skipped"]) == (2, 2, 0)
    assert counts["records_unkeyed"] == 1 and result["skipped"] == {}
    assert linker.seen == ["A maximum entropy tagger.", "Alignment with EM."]
    # union: citance 1 gold {1, 2} (tp 2), citance 2 gold {4, 5} (tp 0): P 2/6, R 2/4
    union = result["protocols"]["union"]
    assert (union["tp"], union["predicted"], union["gold"], union["citances"]) == (2, 6, 4, 2)
    assert result["precision"] == pytest.approx(1 / 3) and result["recall"] == pytest.approx(0.5)
    # per annotator: a: tp 1 of 6 predicted, 3 gold -> P 1/6, R 1/3, F1 2/9;
    # b: tp 1 of 3, 1 gold -> P 1/3, R 1, F1 1/2; then the mean
    per = result["protocols"]["per_annotator"]
    assert per["annotators"] == 2
    assert per["precision"] == pytest.approx((1 / 6 + 1 / 3) / 2)
    assert per["recall"] == pytest.approx((1 / 3 + 1) / 2)
    assert per["f1"] == pytest.approx((2 / 9 + 1 / 2) / 2)
    # every scored citance, enough to rescore it
    listed = result["scored_citances"]
    assert [(c["topic"], c["citance_number"], c["citing_article"]) for c in listed] == [
        ("T01-0001", "1", "C02-0002"), ("T01-0001", "2", "C02-0002")]
    assert listed[0]["predicted"] == [{"sid": "1", "score": 3.0}, {"sid": "2", "score": 2.0},
                                      {"sid": "3", "score": 1.0}]
    assert listed[0]["gold"] == {"(file T01-0001_a.csv)": ["1"], "(file T01-0001_b.csv)": ["2"]}
    assert listed[1]["gold"] == {"(file T01-0001_a.csv)": ["4", "5"]}


def test_empty_reference_article_uses_the_topic_of_the_files_place(tmp_path):
    topic = _csv_topic(tmp_path, {"a": [("1", "C02-0002", "A tagger.", ["1"])]})
    path = topic / "annotation" / "T01-0001_a.csv"
    records, skipped = read_annotations(path, topic="T01-0001")
    assert skipped == 0 and records[0].reference_article == "T01-0001"
    pairs, stats = build_pairs([paper_citances_from_topic(next(iter_topics(topic)))])
    assert stats.used == 1 and pairs[0] == ("A tagger.", TOY_REFERENCE[0], 1.0)


# --------------------------------------------------------- link command
def _cli(args):
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app, load_commands

    load_commands()
    return CliRunner().invoke(app, [str(a) for a in args])


def test_cli_link_evaluate_writes_every_scored_citance(tiny_encoder_dir, tmp_path):
    _csv_topic(tmp_path / "data", {"a": [("1", "C02-0002", "A maximum entropy tagger.", ["1"]),
                                         ("2", "C02-0002", "Alignment with EM.", ["4"])]})
    out = tmp_path / "out" / "eval.json"
    result = _cli(["link", "--evaluate", tmp_path / "data", "--topics", "T01-0001", "--encoder", tiny_encoder_dir,
                   "--no-wmd", "-k", "2", "-o", out])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["counts"]["citances_read"] == 2 and data["counts"]["citances_scored"] == 2
    assert set(data["protocols"]) == {"union", "per_annotator"}
    assert [c["citance_number"] for c in data["scored_citances"]] == ["1", "2"]
    assert all(len(c["predicted"]) == 2 for c in data["scored_citances"])
    text = cli_text(result)  # wasabi wraps long lines
    assert "per annotator" in text and "2 citances read, 2 scored, 0 skipped" in text
    assert not list(out.parent.glob(".tmp-*"))


@pytest.mark.parametrize("case", ["missing", "directory_reference", "output_is_input", "output_in_file",
                                  "unknown_topic", "topic_file_not_dir", "bad_vectors", "pickle_vectors"])
def test_cli_link_bad_input_one_line_exit_1_before_work(tmp_path, case):
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(TOY_REFERENCE) + "\n")
    cit = tmp_path / "cit.txt"
    cit.write_text("A maximum entropy tagger.\n")
    _csv_topic(tmp_path / "data", {"a": [("1", "C02-0002", "A tagger.", ["1"])]})
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    bad_vec = tmp_path / "w2v.bin"
    bad_vec.write_text("not vectors\n")
    args = {
        "missing": ["link", tmp_path / "nope.txt", cit, "--no-wmd"],
        "directory_reference": ["link", tmp_path, cit, "--no-wmd"],
        "output_is_input": ["link", ref, cit, "--no-wmd", "-o", cit],
        "output_in_file": ["link", ref, cit, "--no-wmd", "-o", blocker / "out.jsonl"],
        "unknown_topic": ["link", "--evaluate", tmp_path / "data", "--topics", "Z99-9999", "--no-wmd"],
        "topic_file_not_dir": ["link", "--evaluate", ref, "--no-wmd"],
        "bad_vectors": ["link", ref, cit, "--vectors", bad_vec],
        "pickle_vectors": ["link", ref, cit, "--vectors", _pickle_payload(tmp_path)],
    }[case]
    # a model name that cannot be loaded: every check must come before the model is loaded
    result = _cli(args + ["--encoder", tmp_path / "no-such-encoder"])
    assert result.exit_code == 1, result.output
    # one message (wasabi wraps it to the terminal width and may colour it)
    text = cli_text(result)
    assert text.startswith("✘ link: ") and text.count("✘") == 1, text
    assert "Traceback" not in text and "no-such-encoder" not in text
    assert not (tmp_path / "pwned").exists()
    assert cit.read_text() == "A maximum entropy tagger.\n"


def test_cli_link_k_must_be_positive(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(TOY_REFERENCE) + "\n")
    result = _cli(["link", ref, ref, "--no-wmd", "-k", "0"])
    assert result.exit_code != 0 and "at least 1" in result.output


def test_cli_link_single_paper_shows_progress(tiny_encoder_dir, tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(TOY_REFERENCE) + "\n")
    result = _cli(["link", ref, ref, "--encoder", tiny_encoder_dir, "--no-wmd", "-o", tmp_path / "o.jsonl"])
    assert result.exit_code == 0, result.output
    assert "linking citances" in result.output and "5/5" in result.output


# ------------------------------------------------------ no pickle, anywhere
class _Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def _pickle_payload(tmp_path, name="evil.kv"):
    import pickle

    path = tmp_path / name
    path.write_bytes(pickle.dumps(_Payload(tmp_path / "pwned")))
    return path


@pytest.mark.parametrize("name", ["evil.kv", "evil.bin", "evil.txt", "evil"])
def test_load_vectors_refuses_a_pickle_and_runs_nothing(tmp_path, name):
    from spacy_rhetoric.citret.wmd import load_vectors

    path = _pickle_payload(tmp_path, name)
    with pytest.raises(ValueError, match=str(path.name)):
        load_vectors(path)
    assert not (tmp_path / "pwned").exists()


def test_word2vec_files_round_trip(tmp_path):
    from spacy_rhetoric.citret.wmd import load_vectors

    kv = _tiny_kv()
    for name in ("v.bin", "v.txt", "v.vec"):
        save_vectors(kv, tmp_path / name)
        back = load_vectors(tmp_path / name)
        assert back["beta"] == pytest.approx([0.0, 2.0]) and back["delta"] == pytest.approx([0.6, 0.8])
    # a word2vec binary file made by gensim itself (e.g. GoogleNews) is read
    kv.save_word2vec_format(str(tmp_path / "g.bin.gz"), binary=True)
    assert load_vectors(tmp_path / "g.bin.gz")["gamma"] == pytest.approx([-1.0, 0.0])


def test_linker_from_disk_refuses_pickled_vectors(tmp_path):
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("rhetoric_citance_linker", config={"use_wmd": False})
    saved = tmp_path / "linker"
    saved.mkdir()
    _pickle_payload(saved, "vectors.kv")
    with pytest.raises(ValueError, match="vectors.kv"):
        linker.from_disk(saved)
    assert not (saved / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_every_torch_load_is_weights_only():
    from pathlib import Path


    root = Path(spacy_rhetoric.__file__).parent
    calls = [(p, m) for p in root.rglob("*.py") for m in re.finditer(r"torch\.load\(([^()]|\([^()]*\))*\)", p.read_text())]
    assert calls, "expected torch.load calls in the package"
    bad = [f"{p}: {m.group(0)}" for p, m in calls if "weights_only=True" not in m.group(0)]
    assert not bad, bad


# ------------------------------------------------------ sentence-transformers
def test_sentence_transformers_vectors_equal_plain_mean_pooling(tiny_encoder_dir):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from spacy_rhetoric.citret.encoder import CitRetEncoder
    from spacy_rhetoric.evaluation.metrics import raw_transformer_vectors

    sents = TOY_REFERENCE[:3] + ["Short.", "A much longer sentence " * 3]
    tok = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    model = AutoModel.from_pretrained(str(tiny_encoder_dir)).eval()
    with torch.no_grad():
        batch = tok(sents, padding=True, truncation=True, max_length=32, return_tensors="pt")
        hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        expected = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
        first = hidden[:, 0].numpy()
    raw = raw_transformer_vectors(sents, str(tiny_encoder_dir), batch_size=2, max_length=32, progress=False)
    assert raw.dtype == numpy.float32 and raw.shape == expected.shape
    assert numpy.allclose(raw, expected, atol=1e-5)
    cls = raw_transformer_vectors(sents, str(tiny_encoder_dir), "first", max_length=32, progress=False)
    assert numpy.allclose(cls, first, atol=1e-5)
    enc = CitRetEncoder(str(tiny_encoder_dir), max_length=32)
    assert numpy.allclose(enc.encode(sents, batch_size=3), expected, atol=1e-5)


def test_linker_names(tiny_encoder_dir):
    from spacy_rhetoric.citret.scoring import CitRetScorer
    from spacy_rhetoric.pipeline import citance_linker

    nlp, linker = _toy_nlp(tiny_encoder_dir)
    assert isinstance(linker.retriever, CitRetScorer) and not hasattr(linker, "scorer_")
    assert not hasattr(citance_linker, "DEFAULT_LINKER_CONFIG")
    assert set(nlp.get_pipe_meta("rhetoric_citance_linker").assigns) == {"doc._.citance_links"}


def test_cli_link_unloadable_encoder_one_line_exit_1(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(TOY_REFERENCE) + "\n")
    (tmp_path / "empty-encoder").mkdir()
    result = _cli(["link", ref, ref, "--no-wmd", "--encoder", tmp_path / "empty-encoder"])
    text = cli_text(result)
    assert result.exit_code == 1 and text.startswith("✘ link: ") and text.count("✘") == 1, text
    assert "empty-encoder" in text and "Traceback" not in text


@pytest.mark.slow
def test_cli_link_train_and_word2vec_then_link(tiny_encoder_dir, tmp_path):
    data = tmp_path / "data"
    _csv_topic(data, {"a": [("1", "C02-0002", "A maximum entropy tagger.", ["1"]),
                            ("2", "C02-0002", "Alignment with EM.", ["4"])]})
    run = tmp_path / "run"
    result = _cli(["link-train", data, "--output", run, "--base-model", tiny_encoder_dir, "--max-steps", "2",
                   "--batch-size", "2", "--max-length", "32", "--checkpoint-every", "1"])
    assert result.exit_code == 0, result.output
    info = json.loads((run / "training.json").read_text())
    # 2 citances x (1 cited + 2 same-paper sentences; one topic: no other-paper pairs)
    assert info["steps"] == 2 and info["pairs_built"] == 6
    assert (run / "encoder" / "encoder.json").exists() and (run / "checkpoint" / "trainer_state.json").exists()
    vectors = tmp_path / "w2v.bin"
    result = _cli(["link-word2vec", data, "--output", vectors, "--min-count", "1", "--vector-size", "4"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "eval.json"
    result = _cli(["link", "--evaluate", data, "--encoder", run / "encoder", "--vectors", vectors, "-o", out])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["counts"]["citances_scored"] == 2
    # the word2vec output refuses to overwrite an input, before any work
    result = _cli(["link-word2vec", data, "--output", data])
    assert result.exit_code == 1 and "Traceback" not in result.output
