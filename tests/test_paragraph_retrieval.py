"""COSAEMB paragraph retrieval: the Euclidean k-NN, same-group Recall@k on
hand-computed cases, the evaluation chunks, topic selection for training."""
import numpy
import pytest
import torch
from helpers import save_tiny_bert

from spacy_rhetoric.evaluation.metrics import same_group_recall
from spacy_rhetoric.evaluation.neighbours import cosine_neighbours, nearest_neighbours
from spacy_rhetoric.pretrain.cosaemb import SECTION_TOKENS, add_section_tokens, clscisumm_corpus
from spacy_rhetoric.pretrain.paragraph_retrieval import (
    encode_chunks,
    held_out_papers,
    paragraph_retrieval,
    retrieval_chunks,
)
from spacy_rhetoric.pretrain.sentmask import Paper

# ---------------------------------------------------------------- metric


def test_euclidean_neighbours_differ_from_cosine():
    # b points the same way as q (cosine 1) but is far; c is near but at an angle
    X = numpy.array([[1.0, 0.0], [10.0, 0.0], [1.0, 0.5]], dtype="float32")
    idx_cos, _ = cosine_neighbours(X, 1)
    idx_l2, scores = nearest_neighbours(X, 2, metric="euclidean")
    assert idx_cos[0, 0] == 1
    assert idx_l2[0].tolist() == [2, 1]
    # scores are minus squared distances, best first
    assert scores[0].tolist() == pytest.approx([-0.25, -81.0])
    with pytest.raises(ValueError, match="unknown metric"):
        nearest_neighbours(X, 1, metric="manhattan")


def test_euclidean_leave_one_out_skips_the_query_not_its_duplicate():
    X = numpy.array([[0.0, 0.0], [0.0, 0.0], [3.0, 0.0]], dtype="float32")
    idx, scores = nearest_neighbours(X, 1, metric="euclidean")
    assert idx[:, 0].tolist() == [1, 0, 0]  # duplicates find each other; ties by lower index
    assert scores[:, 0].tolist() == [0.0, 0.0, -9.0]


def test_same_group_recall_hand_computed():
    # 1-d points; groups a, a, b, b, c (c is lone)
    X = numpy.array([[0.0], [5.0], [1.0], [6.0], [2.6]], dtype="float32")
    g = ["a", "a", "b", "b", "c"]
    # nearest (Euclidean): 0 -> 2(b) then 4, 1;  1 -> 3(b), 4, 2;  2 -> 0(a), 4, 1(a)... ranks:
    # q0: [2 (1.0), 4 (2.6), 1 (5.0)] -> a at rank 3
    # q1: [3 (1.0), 4 (2.4), 2 (4.0)] -> a not in top 3
    # q2: [0 (1.0), 4 (1.6), 1 (4.0)] -> b not in top 3 (3 at 5.0)
    # q3: [1 (1.0), 4 (3.4), 2 (5.0)] -> b at rank 3
    # q4: lone, left out
    r = same_group_recall(X, g, ks=(1, 3))
    assert r == {"recall_at_1": 0.0, "recall_at_3": 0.5, "n_queries": 4, "n_lone_queries": 1}
    X2 = numpy.array([[0.0], [0.1], [5.0], [5.1]], dtype="float32")
    assert same_group_recall(X2, ["a", "a", "b", "b"], ks=(1,))["recall_at_1"] == 1.0
    with pytest.raises(ValueError):
        same_group_recall(X2, ["a", "a", "b"])
    with pytest.raises(ValueError):
        same_group_recall(X2, ["a", "a", "b", "b"], ks=(0,))


def test_same_group_recall_k_larger_than_candidates():
    X = numpy.array([[0.0], [1.0], [9.0]], dtype="float32")
    r = same_group_recall(X, ["a", "b", "a"], ks=(1, 5))
    assert r["recall_at_5"] == 1.0 and r["recall_at_1"] == 0.0


# ---------------------------------------------------------------- chunks


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from spacy_rhetoric.util import resolve_hf_model

    tok = AutoTokenizer.from_pretrained(resolve_hf_model("sentence-transformers/all-MiniLM-L6-v2"))
    add_section_tokens(tok)
    return tok


def _paper(pid: str, title: str = "Quokkas zygomorphic") -> Paper:
    sents = ["We study parsing.", "It is hard.", "We propose a model.", "It works.",
             "Results improve.", "Thanks to all."]
    cats = ["abstract", "introduction", "method", "method", "results", "other"]
    return Paper(pid, sents, cats, title)


def test_retrieval_chunks_have_no_title_and_no_other_section(tokenizer):
    chunks = retrieval_chunks([_paper("p1"), _paper("p2")], tokenizer, max_length=64)
    assert [c.section for c in chunks if c.paper_id == "p1"] == ["abstract", "introduction", "method", "results"]
    ttl = tokenizer.convert_tokens_to_ids(SECTION_TOKENS["title"])
    title_ids = tokenizer("Quokkas zygomorphic", add_special_tokens=False)["input_ids"]
    for c in chunks:
        assert ttl not in c.input_ids
        assert not set(title_ids) & set(c.input_ids)
    meth = tokenizer.convert_tokens_to_ids(SECTION_TOKENS["method"])
    method_chunk = next(c for c in chunks if c.section == "method")
    assert method_chunk.input_ids[:2] == [tokenizer.cls_token_id, meth]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """Two tiny BERTs: one whose vocabulary has the section tokens, one without."""
    return {name: save_tiny_bert(tmp_path_factory.mktemp(name), section_tokens=(name == "with_tokens"))
            for name in ("with_tokens", "without_tokens")}


def test_encode_chunks_strips_tokens_the_model_lacks(tokenizer, tiny_models):
    from transformers import AutoModel

    chunks = retrieval_chunks([_paper("p1")], tokenizer, max_length=64)
    model = AutoModel.from_pretrained(tiny_models["without_tokens"])
    assert model.get_input_embeddings().num_embeddings < len(tokenizer)
    X = encode_chunks(model, chunks, tokenizer.pad_token_id, batch_size=3)
    assert X.shape == (len(chunks), 16) and numpy.isfinite(X).all()
    # the same as encoding each chunk alone with the section tokens removed (batching/padding-invariant)
    from spacy_rhetoric.pretrain.cosaemb import encode_inputs

    n_vocab = model.get_input_embeddings().num_embeddings
    with torch.no_grad():
        alone = encode_inputs(model, [[i for i in chunks[1].input_ids if i < n_vocab]], tokenizer.pad_token_id)
    assert numpy.allclose(X[1], alone[0].numpy(), atol=1e-5)


def test_paragraph_retrieval_end_to_end(tiny_models):
    papers = [_paper(f"p{i}") for i in range(3)]
    papers[2].sentences = ["Completely different words here.", "Zebra giraffe lion.", "Tea and cake.",
                           "Rain falls.", "Snow falls.", "Thanks."]
    for name, path in tiny_models.items():
        r = paragraph_retrieval(str(path), papers, max_length=64, batch_size=4)
        assert r["papers"] == 3 and r["chunks"] == 12
        assert r["section_tokens_seen"] is (name == "with_tokens")
        for metric in ("euclidean", "cosine"):
            assert 0.0 <= r[metric]["recall_at_1"] <= r[metric]["recall_at_3"] <= 1.0
            assert r[metric]["n_queries"] == 12
    with pytest.raises(ValueError, match="at least 2 papers"):
        paragraph_retrieval(str(tiny_models["with_tokens"]), papers[:1], max_length=64)


# ---------------------------------------------------------------- topics


def test_held_out_papers_and_training_exclusion(shared_data):
    manual = shared_data / "cl-scisumm" / "training-40-manual"
    corpus = clscisumm_corpus(manual, include=["C00-2123", "C02-1025"], max_citing=1)
    assert {"C00-2123", "C02-1025"} <= set(corpus.papers) and len(corpus.papers) == 4
    left = clscisumm_corpus(manual, include=["C00-2123", "C02-1025"], exclude=["C02-1025"], max_citing=1)
    assert "C02-1025" not in left.papers and "C00-2123" in left.papers
    papers = held_out_papers([manual], topics=["C00-2123", "C02-1025"], exclude_ids=["C02-1025"])
    assert [p.paper_id for p in papers] == ["C00-2123"]
    with pytest.raises(ValueError, match="not found"):
        held_out_papers([manual], topics=["NO-SUCH-TOPIC"])


def test_train_cosaemb_cli_topic_options(tmp_path, shared_data):
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app, load_commands

    load_commands()
    result = CliRunner().invoke(app, ["train-cosaemb", str(shared_data / "cl-scisumm" / "training-40-manual"),
                                      str(tmp_path / "out"), "--topics", "C00-2123", "--exclude-topics", "C00-2123"])
    assert result.exit_code == 1
    assert "no papers read" in result.output
    assert not (tmp_path / "out").exists()


def test_split_ids(tmp_path):
    from spacy_rhetoric.cli.common import split_ids

    assert split_ids(None) is None
    assert split_ids(" a, b,,c ") == ["a", "b", "c"]
    f = tmp_path / "ids.txt"
    f.write_text("x\ny, z\n")
    assert split_ids(str(f)) == ["x", "y", "z"]
