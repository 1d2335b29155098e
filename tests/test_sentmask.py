"""SENT-MASK: InfoNCE loss, window arithmetic, example building, training round trip."""
import json
import math
import random

import pytest
import torch
from helpers import save_tiny_bert

from spacy_rhetoric.losses import info_nce_loss
from spacy_rhetoric.pretrain.sentmask import (
    Paper,
    SentMaskSettings,
    build_window_example,
    epoch_windows,
    negative_ids,
    span_means,
)
from spacy_rhetoric.pretrain.windows import count_targets, pack_window, plan_target_windows

# ---------------------------------------------------------------- InfoNCE


def test_info_nce_hand_computed():
    anchor = torch.tensor([[1.0, 0.0]])
    positive = torch.tensor([[1.0, 0.0]])
    negatives = torch.tensor([[[0.0, 1.0], [-1.0, 0.0]]])
    # logits (1, 0, -1): -log(e / (e + 1 + e^-1))
    expected = -math.log(math.e / (math.e + 1 + math.exp(-1)))
    assert info_nce_loss(anchor, positive, negatives).item() == pytest.approx(expected, rel=1e-6)
    # temperature 0.5 doubles the logits (2, 0, -2)
    expected_t = -math.log(math.exp(2) / (math.exp(2) + 1 + math.exp(-2)))
    assert info_nce_loss(anchor, positive, negatives, temperature=0.5).item() == pytest.approx(expected_t, rel=1e-6)


def test_info_nce_batch_mean_and_gradient():
    a = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    p = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    n = torch.tensor([[[0.0, 1.0]], [[0.0, 0.0]]])
    # row 0: logits (1, 0); row 1: logits (2, 0)
    expected = 0.5 * (math.log(1 + math.exp(-1)) + math.log(1 + math.exp(-2)))
    assert info_nce_loss(a, p, n).item() == pytest.approx(expected, rel=1e-6)
    # d/d anchor of row 0: -(1 - sigma(1)) * p + (1 - sigma(1)) * n, / batch 2
    a = a.clone().requires_grad_(True)
    info_nce_loss(a, p, n).backward()
    q = 1 - 1 / (1 + math.exp(-1))
    assert a.grad[0].tolist() == pytest.approx([-q / 2, q / 2], rel=1e-5)


def test_info_nce_gradcheck():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 4, dtype=torch.double, generator=g, requires_grad=True)
    p = torch.randn(3, 4, dtype=torch.double, generator=g, requires_grad=True)
    n = torch.randn(3, 2, 4, dtype=torch.double, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, y, z: info_nce_loss(x, y, z, temperature=0.7), (a, p, n))


def test_info_nce_errors():
    with pytest.raises(ValueError):
        info_nce_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(ValueError):
        info_nce_loss(torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 1, 3), temperature=0)


# ---------------------------------------------------------------- windows


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 50, 203])
@pytest.mark.parametrize("window_sents,targets", [(8, 4), (4, 2), (5, 5), (6, 1), (7, 3)])
def test_every_sentence_is_a_target_exactly_once(n, window_sents, targets):
    windows = plan_target_windows(n, window_sents, targets)
    assert count_targets(windows) == {i: 1 for i in range(n)}
    for w in windows:
        assert 0 <= w.start <= w.targets[0] < w.targets[1] <= w.end <= n
        assert w.end - w.start == min(window_sents, n)  # bounded, and full where the paper allows
    # consecutive windows overlap when there is context
    if n > window_sents and window_sents > targets:
        assert all(b.start < a.end for a, b in zip(windows, windows[1:]))


def test_window_hand_computed():
    # 10 sentences, windows of 6 with 2 targets: 2 context sentences each side, shifted at the edges
    spans = [(w.start, w.end, w.targets) for w in plan_target_windows(10, 6, 2)]
    assert spans == [(0, 6, (0, 2)), (0, 6, (2, 4)), (2, 8, (4, 6)), (4, 10, (6, 8)), (4, 10, (8, 10))]


def test_plan_errors():
    with pytest.raises(ValueError):
        plan_target_windows(5, 2, 3)


def test_pack_window_spans_and_truncation():
    packed = pack_window([[5, 6, 7], [8], [9, 10, 11, 12]], cls_id=1, sep_id=2, max_sentence_tokens=2)
    assert packed.input_ids == [1, 5, 6, 8, 9, 10, 2]
    assert packed.spans == [(1, 3), (3, 4), (4, 6)]


# ---------------------------------------------------------------- examples


def test_build_window_example():
    token_ids = [[100 + i, 200 + i] for i in range(12)]  # sentence i = [100+i, 200+i]
    windows = plan_target_windows(12, 4, 2)
    w = windows[2]  # targets 4, 5 in window 3:7
    assert (w.start, w.end, w.targets) == (3, 7, (4, 6))
    settings = SentMaskSettings(window_sents=4, targets_per_window=2, n_negatives=3, max_sentence_tokens=8)
    ex = build_window_example(token_ids, w, settings, cls_id=1, sep_id=2, mask_id=9, rng=random.Random(0))
    assert len(ex.sequences) == 1 + 2 * (1 + 3)
    original = ex.sequences[0]
    assert original == [1, 103, 203, 104, 204, 105, 205, 106, 206, 2]
    for k, target in enumerate(w.target_ids()):
        s, e = ex.positive_spans[k]
        assert original[s:e] == token_ids[target]
        masked = ex.sequences[ex.anchor_rows[k]]
        s, e = ex.anchor_spans[k]
        assert masked[s:e] == [9]
        assert 9 not in original
        for row, (s, e) in zip(ex.negative_rows[k], ex.negative_spans[k]):
            neg = ex.sequences[row][s:e]
            i = neg[0] - 100
            assert neg == token_ids[i] and not (w.start <= i < w.end)  # another sentence, outside the window
            # the rest of the window is unchanged
            assert ex.sequences[row][:s] == original[:ex.positive_spans[k][0]]


def test_negative_ids_small_paper():
    w = plan_target_windows(3, 4, 2)[0]
    ids = negative_ids(3, w, 1, 4, random.Random(0))
    assert len(ids) == 4 and 1 not in ids


def test_span_means():
    hidden = torch.arange(24, dtype=torch.float).reshape(2, 4, 3)
    out = span_means(hidden, [0, 1], [(1, 3), (0, 1)])
    assert out.tolist() == [[4.5, 5.5, 6.5], [12.0, 13.0, 14.0]]


def test_epoch_windows_cover_all_papers():
    papers = [Paper("a", ["x"] * 9), Paper("b", ["y"] * 2), Paper("c", ["z"] * 5)]
    settings = SentMaskSettings(window_sents=4, targets_per_window=2, min_sentences=3)
    items = epoch_windows(papers, settings, random.Random(0))
    targets = sorted((i, t) for i, w in items for t in w.target_ids())
    assert targets == [(0, t) for t in range(9)] + [(2, t) for t in range(5)]


# ---------------------------------------------------------------- training round trip


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    """A tiny random BERT with the MiniLM tokenizer (local files only)."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


SENTS = [
    "We study rhetorical structure.", "Prior work ignored context.", "We propose a contrastive method.",
    "The model reads windows of sentences.", "Each target is masked.", "Results improve on all sets.",
    "We release the code.", "Future work will add sections.",
]


@pytest.mark.parametrize("mlm_weight", [0.0, 0.5])
def test_train_sentmask_round_trip(tmp_path, tiny_model_dir, mlm_weight):
    from transformers import AutoModel, AutoTokenizer

    from spacy_rhetoric.pretrain.sentmask import train_sentmask

    settings = SentMaskSettings(model=str(tiny_model_dir), window_sents=4, targets_per_window=2,
                                n_negatives=2, max_sentence_tokens=8, windows_per_step=2, epochs=2,
                                learn_rate=1e-3, warmup_steps=1, log_every=1, mlm_weight=mlm_weight)
    info = train_sentmask([Paper("p", SENTS), Paper("q", SENTS[::-1])], tmp_path, settings, progress=False)
    assert info["windows_per_epoch"] == 8
    assert info["steps"] == 8 and info["targets"] == 2 * 16  # every sentence once per epoch
    assert all(math.isfinite(row["loss"]) for row in info["history"])
    model = AutoModel.from_pretrained(tmp_path / "model")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "model")
    assert "[SENT-MASK]" in tokenizer.get_vocab()
    assert model.get_input_embeddings().num_embeddings == len(tokenizer)
    assert (tmp_path / "model" / "model.safetensors").exists()
    assert (tmp_path / "sentmask.json").exists()


@pytest.mark.slow
def test_sentmask_model_initialises_shared_transformer(tmp_path, tiny_model_dir):
    """The written directory is what [components.transformer.model.name] name points at."""
    from spacy import util
    from spacy.training import Example

    from spacy_rhetoric.extensions import set_sent_labels
    from spacy_rhetoric.pretrain.sentmask import train_sentmask
    from spacy_rhetoric.resources import config_path

    settings = SentMaskSettings(model=str(tiny_model_dir), window_sents=4, targets_per_window=2,
                                n_negatives=1, max_sentence_tokens=8, max_steps=1, log_every=1)
    train_sentmask([Paper("p", SENTS)], tmp_path, settings, progress=False)
    config = util.load_config(config_path("rhetoric_trf"), overrides={
        "components.transformer.model.name.name": str(tmp_path / "model")}, interpolate=True)
    nlp = util.load_model_from_config(config, auto_fill=True, validate=True)
    text = " ".join(SENTS)
    ref = nlp.get_pipe("sentencizer")(nlp.make_doc(text))
    set_sent_labels(ref, ["background", "background", "method", "method", "method", "result", "other", "other"])
    nlp.initialize(lambda: [Example(nlp.make_doc(text), ref)])
    doc = nlp(text)
    assert doc._.trf_data.tensors[0].shape[-1] == 16  # the tiny SENT-MASK model
    assert all(sent._.rhetoric_label for sent in doc.sents)


# ---------------------------------------------------------------- inputs and CLI


def test_clscisumm_papers_reference_first(shared_data):
    from spacy_rhetoric.pretrain.sentmask import clscisumm_papers

    topic = shared_data / "cl-scisumm" / "training-40-manual" / "C00-2123"
    papers = list(clscisumm_papers(topic, citing=True))
    assert papers[0].paper_id == "C00-2123" and len(papers) > 5
    assert papers[0].title.startswith("Word Re-ordering") and papers[0].title not in papers[0].sentences
    assert len(papers[0].sentences) == len(papers[0].sections) and "abstract" in papers[0].sections
    assert len(list(clscisumm_papers(topic))) == 1  # reference papers only by default


def test_pretrain_sentmask_cli_on_docbin(tmp_path, tiny_model_dir):
    import spacy
    from spacy.tokens import DocBin
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app, load_commands

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    db = DocBin(store_user_data=True)
    db.add(nlp(" ".join(SENTS)))
    db.to_disk(tmp_path / "papers.spacy")
    load_commands()
    result = CliRunner().invoke(app, [
        "pretrain-sentmask", str(tmp_path / "papers.spacy"), str(tmp_path / "out"), "--model", str(tiny_model_dir),
        "--window-sents", "4", "--targets-per-window", "2", "--negatives", "2", "--max-sentence-tokens", "8",
        "--max-steps", "1"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "model" / "model.safetensors").exists()


def test_sentmask_learns_on_one_paper(tmp_path, tiny_model_dir):
    """Overfitting one paper: the InfoNCE loss (4 candidates, chance log 4) goes well below chance."""
    from spacy_rhetoric.pretrain.sentmask import train_sentmask

    sents = SENTS + ["Tables show numbers.", "Figures show curves."]
    settings = SentMaskSettings(model=str(tiny_model_dir), window_sents=4, targets_per_window=2, n_negatives=3,
                                max_sentence_tokens=8, windows_per_step=5, epochs=30, learn_rate=1e-3,
                                warmup_steps=1, log_every=10)
    info = train_sentmask([Paper("p", sents)], tmp_path, settings, progress=False)
    losses = [row["loss"] for row in info["history"]]
    assert losses[-1] < 0.5 * math.log(4) and losses[-1] < losses[0]


def test_train_sentmask_resumes_from_checkpoint(tmp_path, tiny_model_dir, monkeypatch):
    """Killed after step 5 (last checkpoint at step 3), the same call resumes and ends
    with the weights of an uninterrupted run (batches, MLM masks and dropout replayed)."""
    from safetensors.torch import load_file

    from spacy_rhetoric.ml.training_loop import CheckpointError
    from spacy_rhetoric.pretrain import sentmask

    settings = SentMaskSettings(model=str(tiny_model_dir), window_sents=4, targets_per_window=2,
                                n_negatives=2, max_sentence_tokens=8, windows_per_step=2, epochs=2,
                                learn_rate=1e-3, warmup_steps=1, log_every=1, mlm_weight=0.5, checkpoint_every=3)
    papers = [Paper("p", SENTS), Paper("q", SENTS[::-1])]
    full = sentmask.train_sentmask(papers, tmp_path / "full", settings, progress=False)

    class Killed(Exception):
        pass

    real_loss, calls = sentmask.sentmask_loss, []

    def dies_at_step_6(*args, **kwargs):
        calls.append(1)
        if len(calls) == 6:
            raise Killed
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(sentmask, "sentmask_loss", dies_at_step_6)
    with pytest.raises(Killed):
        sentmask.train_sentmask(papers, tmp_path / "run", settings, progress=False)
    assert json.loads((tmp_path / "run" / "checkpoint" / "trainer_state.json").read_text())["step"] == 3
    with pytest.raises(CheckpointError):  # other settings: refused, not mixed
        sentmask.train_sentmask(papers, tmp_path / "run", SentMaskSettings(**{**settings.__dict__, "seed": 1}),
                                progress=False)
    monkeypatch.setattr(sentmask, "sentmask_loss", real_loss)
    resumed = sentmask.train_sentmask(papers, tmp_path / "run", settings, progress=False)
    assert resumed["steps"] == full["steps"] == 8 and resumed["targets"] == full["targets"]
    assert not (tmp_path / "run" / "checkpoint").exists()  # removed once the model is written
    a, b = (load_file(str(p / "model" / "model.safetensors")) for p in (tmp_path / "full", tmp_path / "run"))
    for name in a:
        assert torch.allclose(a[name], b[name], atol=1e-6), name
