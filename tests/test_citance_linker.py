"""Tests of the CitRet citance linker (spacy_rhetoric.citret + rhetoric_citance_linker)."""
import json

import numpy
import pytest
import spacy
from spacy.tokens import DocBin

import spacy_rhetoric  # noqa: F401  (extensions)
from spacy_rhetoric import extensions as ext
from spacy_rhetoric.citret.denoise import common_components, denoise, remove_common_components
from spacy_rhetoric.citret.evaluation import Task1aScore, merge_annotators
from spacy_rhetoric.citret.pairs import PaperCitances, build_pairs, paper_citances_from_topic
from spacy_rhetoric.citret.scoring import CitRetScorer, CitRetSettings
from spacy_rhetoric.citret.text import append_keywords, preprocess, shared_ngrams
from spacy_rhetoric.citret.wmd import train_word2vec, wmd_distances, wmd_similarities
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
def test_link_ranking_with_minilm_and_wmd(tmp_path):
    corpus = [preprocess(t) for t in TOY_REFERENCE * 20]
    kv_path = tmp_path / "toy.kv"
    train_word2vec(corpus, vector_size=8, min_count=1, seed=1).save(str(kv_path))
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
    from spacy_rhetoric.citret.encoder import SentenceEncoder, finetune

    pairs = [(TOY_REFERENCE[i], TOY_REFERENCE[j], 1.0 if i == j else 0.3 if abs(i - j) == 1 else 0.0)
             for i in range(5) for j in range(5)]
    full = SentenceEncoder(str(tiny_encoder_dir), max_length=32)
    res = finetune(full, pairs, epochs=2, batch_size=8, learning_rate=1e-3, max_steps=6, seed=0,
                   progress=False)
    assert res["steps"] == 6 and res["pairs"] == 25
    part = SentenceEncoder(str(tiny_encoder_dir), max_length=32)
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
    resumed = SentenceEncoder(str(tiny_encoder_dir), max_length=32)
    res2 = finetune(resumed, pairs, epochs=2, batch_size=8, learning_rate=1e-3, max_steps=6, seed=0,
                    checkpoint_dir=ckpt, progress=False)
    assert res2["steps"] == 6
    for (name, a), (_, b) in zip(full.model.state_dict().items(), resumed.model.state_dict().items()):
        assert numpy.allclose(a.numpy(), b.numpy(), atol=1e-5), name
    fresh = SentenceEncoder(str(tiny_encoder_dir), max_length=32)
    assert not numpy.allclose(fresh.encode(TOY_REFERENCE), full.encode(TOY_REFERENCE))


def test_linker_finetune_then_round_trips(tiny_encoder_dir, tmp_path):
    kv = _tiny_kv()
    kv_path = tmp_path / "hand.kv"
    kv.save(str(kv_path))
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
    assert (tmp_path / "pipeline" / "rhetoric_citance_linker" / "vectors.kv").exists()
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
    linker._pattern = __import__("re").compile(r"\(\w+,? \d{4}\)")
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

    from spacy_rhetoric.cli import _load_commands, app

    _load_commands()
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
