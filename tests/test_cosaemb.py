"""COSAEMB: graded triplet loss, chunk arithmetic, triplet builders on a real
CL-SciSumm topic, training and the rhetoric_section_encoder round trips."""
import random
from collections import Counter

import numpy
import pytest
import torch
from helpers import save_tiny_bert

from spacy_rhetoric.losses import graded_triplet_loss
from spacy_rhetoric.pretrain.cosaemb import (
    GLOBAL,
    INTER,
    LOCAL,
    SECTION_TOKENS,
    CosaembSettings,
    add_section_tokens,
    build_triplets,
    chunk_paper,
    clscisumm_corpus,
    paper_chunks,
)
from spacy_rhetoric.pretrain.windows import iter_sections, plan_chunks

# ---------------------------------------------------------------- loss


def test_graded_triplet_loss_hand_computed():
    a = torch.zeros(3, 2)
    p = torch.tensor([[1.0, 0.0]] * 3)
    n = torch.tensor([[1.0, 1.0]] * 3)
    # d(a,p)^2 = 1, d(a,n)^2 = 2: hinges max(0, 1 - 2 + m) for m = 1, 2, 3 -> 0, 1, 2
    loss = graded_triplet_loss(a, p, n, torch.tensor([1.0, 2.0, 3.0]))
    assert loss.item() == pytest.approx(1.0)
    a.requires_grad_(True)
    graded_triplet_loss(a, p, n, torch.tensor([1.0, 2.0, 3.0])).backward()
    # active hinges (rows 1, 2): d/da = 2(n - p) / 3 = (0, 2/3); row 0 inactive
    assert numpy.allclose(a.grad.numpy(), [[0.0, 0.0], [0.0, 2 / 3], [0.0, 2 / 3]])


def test_graded_triplet_loss_gradcheck_and_errors():
    g = torch.Generator().manual_seed(0)
    a, p, n = (torch.randn(4, 3, dtype=torch.double, generator=g, requires_grad=True) for _ in range(3))
    m = torch.tensor([1.0, 2.0, 3.0, 2.0], dtype=torch.double)
    assert torch.autograd.gradcheck(lambda x, y, z: graded_triplet_loss(x, y, z, m), (a, p, n))
    with pytest.raises(ValueError):
        graded_triplet_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(3))


def test_graded_triplet_agrees_with_margin_graded_class():
    """One (same label vs other group) triplet: the class's margin 3 = local."""
    from spacy_rhetoric.losses import MarginGradedTripletLoss

    emb = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    cls_loss = MarginGradedTripletLoss(label_margin=3.0, group_margin=1.0)(emb, torch.tensor([0, 0, 1]))
    # triplets (0,1,2): 1 - 2 + 3 = 2 and (1,0,2): 1 - 1 + 3 = 3 -> mean 2.5
    ours = graded_triplet_loss(emb[[0, 1]], emb[[1, 0]], emb[[2, 2]], torch.tensor([3.0, 3.0]))
    assert ours.item() == pytest.approx(cls_loss.item()) == pytest.approx(2.5)


# ---------------------------------------------------------------- chunks


def test_plan_chunks_hand_computed():
    chunks = plan_chunks([3, 3, 3, 3], budget=7)
    assert [(c.start, c.end, c.repeated) for c in chunks] == [(0, 2, False), (1, 3, True), (2, 4, True)]
    # a sentence over the budget is alone, and cannot be repeated with its neighbour
    chunks = plan_chunks([3, 10, 3], budget=7)
    assert [(c.start, c.end, c.repeated) for c in chunks] == [(0, 1, False), (1, 2, False), (2, 3, False)]


@pytest.mark.parametrize("seed", range(5))
def test_plan_chunks_properties(seed):
    rng = random.Random(seed)
    lengths = [rng.randint(1, 40) for _ in range(60)]
    budget = 70
    chunks = plan_chunks(lengths, budget)
    covered = set()
    for prev, cur in zip(chunks, chunks[1:]):
        if cur.repeated:
            assert cur.start == prev.end - 1  # the previous chunk's last sentence, once
        else:
            assert cur.start == prev.end
    for c in chunks:
        assert sum(lengths[c.start:c.end]) <= budget
        covered.update(range(c.start, c.end))
    assert covered == set(range(60))
    assert not chunks[0].repeated


def test_iter_sections():
    assert list(iter_sections(["a", "a", "b", "a"])) == [("a", 0, 2), ("b", 2, 3), ("a", 3, 4)]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from spacy_rhetoric.util import resolve_hf_model

    tok = AutoTokenizer.from_pretrained(resolve_hf_model("sentence-transformers/all-MiniLM-L6-v2"))
    add_section_tokens(tok)
    return tok


def test_paper_chunks_layout(tokenizer):
    t = tokenizer.convert_tokens_to_ids
    sents = [[1000 + i] * 5 for i in range(8)]  # 5 word pieces each
    cats = ["abstract"] * 2 + ["introduction"] * 6
    pc = paper_chunks("p", sents, cats, [7, 8], tokenizer, max_length=2 + 4 + 2 + 12)  # budget 12: 2 sentences
    cls, sep, ttl = tokenizer.cls_token_id, tokenizer.sep_token_id, t("[TTL]")
    assert pc.abstract.input_ids == [cls, ttl, 7, 8, sep, t("[ABS]")] + sents[0] + sents[1] + [sep]
    run = pc.sections["introduction"][0]
    assert [c.sentences for c in run] == [(2, 4), (3, 5), (4, 6), (5, 7), (6, 8)]
    intr = t("[INTR]")
    assert run[0].input_ids == [cls, ttl, 7, 8, sep, intr] + sents[2] + sents[3] + [sep]
    # later chunks: [INTR] repeated-sentence [INTR] new sentences, no title
    assert run[1].input_ids == [cls, intr] + sents[3] + [intr] + sents[4] + [sep]
    assert run[1].repeated and not run[0].repeated
    assert all(len(c.input_ids) <= 20 for c in run)


def test_section_tokens_added(tokenizer):
    vocab = tokenizer.get_vocab()
    assert set(SECTION_TOKENS.values()) == {"[INTR]", "[RW]", "[METH]", "[RES]", "[CONC]", "[ABS]", "[TTL]"}
    assert all(tok in vocab for tok in SECTION_TOKENS.values())
    assert tokenizer.tokenize("[METH] we") == ["[METH]", "we"]


# ---------------------------------------------------------------- triplets on a real topic


@pytest.fixture(scope="module")
def topic_corpus(shared_data):
    return clscisumm_corpus(shared_data / "cl-scisumm" / "training-40-manual" / "C00-2123", max_citing=4)


def test_triplets_on_clscisumm_topic(topic_corpus, tokenizer):
    corpus = topic_corpus
    ref = "C00-2123"
    assert ref in corpus.papers and len(corpus.papers) == 5
    assert all(cited == {ref} for cited in corpus.cites.values()) and len(corpus.cites) == 4
    chunks = {pid: chunk_paper(p, tokenizer, 128) for pid, p in corpus.papers.items()}
    # chunk boundaries on sentences, and within the length
    for pc in chunks.values():
        for c in pc.chunks():
            assert len(c.input_ids) <= 128 and c.sentences[0] < c.sentences[1]
    triplets = build_triplets(chunks, corpus.cites, CosaembSettings(), random.Random(0))
    kinds = Counter((t.kind, t.margin) for t in triplets)
    assert set(kinds) == {(LOCAL, 3.0), (GLOBAL, 2.0), (INTER, 1.0)}
    for t in triplets:
        if t.kind == LOCAL:
            assert t.anchor.paper_id == t.positive.paper_id != t.negative.paper_id
            assert t.anchor.section == t.positive.section and t.anchor.index == t.positive.index + 1
        elif t.kind == GLOBAL:
            assert t.anchor.index == 0 and t.positive.section == "abstract"
            assert t.positive.paper_id == t.anchor.paper_id
            assert t.negative.paper_id in corpus.cites[t.anchor.paper_id]  # a cited paper's abstract
        else:
            assert t.anchor.section == t.positive.section == t.negative.section == "abstract"
            assert t.positive.paper_id in corpus.cites[t.anchor.paper_id]
            assert t.negative.paper_id not in corpus.cites[t.anchor.paper_id] | {t.anchor.paper_id}
    assert kinds[(INTER, 1.0)] == sum(pc.abstract is not None for pid, pc in chunks.items() if pid != ref)


# ---------------------------------------------------------------- training and component


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert_cosaemb"))


def test_train_cosaemb_tiny(tmp_path, tiny_model_dir, topic_corpus):
    from transformers import AutoModel, AutoTokenizer

    from spacy_rhetoric.pretrain.cosaemb import train_cosaemb

    settings = CosaembSettings(model=str(tiny_model_dir), max_length=64, max_steps=2, batch_size=4,
                               learn_rate=1e-3, warmup_steps=1, log_every=1)
    info = train_cosaemb(topic_corpus, tmp_path, settings, progress=False)
    assert info["steps"] == 2 and all(info["triplets"][k] > 0 for k in (LOCAL, GLOBAL, INTER))
    tok = AutoTokenizer.from_pretrained(tmp_path / "model")
    assert "[METH]" in tok.get_vocab()
    assert AutoModel.from_pretrained(tmp_path / "model").get_input_embeddings().num_embeddings == len(tok)


TEXT = ("We study chunks. Sections matter. "
        "Prior work used abstracts. It ignored the rest. "
        "We encode sections. Each chunk is short. Results are good.")


def _doc(nlp):
    from spacy_rhetoric.extensions import set_doc_value, set_sent_sections

    doc = nlp.make_doc(TEXT)
    doc = nlp.get_pipe("sentencizer")(doc)
    set_sent_sections(doc, ["abstract", "abstract", "introduction", "introduction", "method", "method", "results"])
    set_doc_value(doc, "title", "Chunks of papers")
    return doc


def test_section_encoder_round_trips(tmp_path, tiny_model_dir):
    import spacy
    from spacy.tokens import DocBin

    from spacy_rhetoric.pipeline.section_encoder import chunk_vectors

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    enc = nlp.add_pipe("rhetoric_section_encoder", config={"model_name": str(tiny_model_dir), "max_length": 24})
    doc = enc(_doc(nlp))
    chunks = doc._.rhetoric_chunks
    assert [c["section"] for c in chunks][:2] == ["abstract", "introduction"]
    assert chunks[0]["start_char"] == 0 and TEXT[chunks[0]["start_char"]:chunks[0]["end_char"]] == \
        "We study chunks. Sections matter."
    assert {c["section"] for c in chunks} == {"abstract", "introduction", "method", "results"}
    vectors = chunk_vectors(doc)
    assert vectors.shape == (len(chunks), 16)
    # DocBin round trip (msgpack gives tuples back)
    db = DocBin(store_user_data=True)
    db.add(doc)
    doc2 = list(DocBin().from_bytes(db.to_bytes()).get_docs(nlp.vocab))[0]
    assert numpy.allclose(chunk_vectors(doc2), vectors)
    assert [c["section"] for c in doc2._.rhetoric_chunks] == [c["section"] for c in chunks]
    # pipeline to_disk -> spacy.load, and to_bytes -> from_bytes: same vectors
    nlp.to_disk(tmp_path / "pipe")
    nlp2 = spacy.load(tmp_path / "pipe")
    assert (tmp_path / "pipe" / "rhetoric_section_encoder" / "model" / "model.safetensors").exists()
    assert numpy.allclose(chunk_vectors(nlp2.get_pipe("rhetoric_section_encoder")(_doc(nlp2))), vectors, atol=1e-5)
    enc3 = spacy.blank("en").add_pipe("rhetoric_section_encoder").from_bytes(enc.to_bytes())
    assert enc3.cfg["max_length"] == 24
    assert numpy.allclose(chunk_vectors(enc3(_doc(nlp))), vectors, atol=1e-5)


def test_section_encoder_needs_sentences(tiny_model_dir):
    import spacy

    nlp = spacy.blank("en")
    enc = nlp.add_pipe("rhetoric_section_encoder", config={"model_name": str(tiny_model_dir)})
    with pytest.raises(ValueError, match="sentence boundaries"):
        enc(nlp.make_doc("No boundaries here"))


def test_train_cosaemb_cli(tmp_path, tiny_model_dir, shared_data):
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app, load_commands

    load_commands()
    topic = shared_data / "cl-scisumm" / "training-40-manual" / "C00-2123"
    result = CliRunner().invoke(app, [
        "train-cosaemb", str(topic), str(tmp_path / "out"), "--model", str(tiny_model_dir), "--max-citing", "2",
        "--max-length", "64", "--max-steps", "1", "--batch-size", "2"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "model" / "model.safetensors").exists()
    assert (tmp_path / "out" / "cosaemb.json").exists()
