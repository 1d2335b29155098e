"""ml/finetuned.py: the member of the full-paper mixture that fine-tunes the
top layers of all-MiniLM-L6-v2 (installed package, offline) at initialize."""
import gc
import json
import weakref

import numpy
import pytest
import spacy
import srsly
from device_sim import device_ops, host, is_device_array
from helpers import PAPER, as_X, paper_doc
from helpers import PAPER_LABELS as LABELS

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.errors import RhetoricError
from spacy_rhetoric.ml.finetuned import SEPARATOR, pair_texts
from spacy_rhetoric.ml.members import fit_members, sentence_texts
from spacy_rhetoric.ml.pooling import doc_sentences, make_indices
from spacy_rhetoric.readers.common import doc_from_sentences

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def test_pairs_read_the_heading_and_the_neighbours():
    nlp = spacy.blank("en")
    X = as_X([paper_doc(nlp, PAPER, labels=False)])
    texts = sentence_texts(X)
    pairs = pair_texts(X, texts, context_chars=10)
    assert pairs[0] == SEPARATOR.join(["1 Introduction", "", texts[1][:10]])
    assert pairs[2] == SEPARATOR.join(["2 Method", texts[1][-10:], texts[3][:10]])
    assert pairs[-1] == SEPARATOR.join(["3 Results", texts[-2][-10:], ""])
    # without headings the section category stands in; use_sections=False leaves both out
    plain = doc_from_sentences(nlp, ["A b c d.", "E f g h."], sections=["method", "method"])
    assert pair_texts(as_X([plain]), ["A b c d.", "E f g h."], 3)[0] == SEPARATOR.join(["method", "", "E f"])
    assert pair_texts(as_X([plain]), ["A b c d.", "E f g h."], 3, use_sections=False)[0] == \
        SEPARATOR.join(["", "", "E f"])


def test_settings_are_checked():
    from spacy_rhetoric.ml.finetuned import finetuned_expert

    with pytest.raises(RhetoricError):
        finetuned_expert(MODEL, epochs=0)
    with pytest.raises(RhetoricError):
        finetuned_expert(MODEL, max_length=4)


def test_the_config_block_sets_the_member_that_runs():
    """``FinetunedMember.v1``'s arguments are the settings the built member
    fine-tunes and predicts with (``context_chars`` included)."""
    from spacy.util import registry

    from spacy_rhetoric.ml.members import PAPERS

    registered = registry.architectures.get("spacy_rhetoric.FinetunedMember.v1")

    def build(**kwargs):
        return registered(PAPERS, **kwargs)

    member = build(name=MODEL, epochs=0.5, frozen_layers=3, max_length=64, context_chars=40, precision="int8")
    assert {k: member.attrs[k] for k in ("epochs", "frozen_layers", "max_length", "context_chars")} == \
        {"epochs": 0.5, "frozen_layers": 3, "max_length": 64, "context_chars": 40}
    # how it predicts is the config's, held by the shim and not stored with the weights
    assert member.shims[0].precision == "int8" and "precision" not in member.attrs
    assert build(name=MODEL).shims[0].precision == "auto"
    with pytest.raises(RhetoricError, match="precision"):
        build(name=MODEL, precision="fp8")
    assert build(name=MODEL).attrs["context_chars"] == 60
    assert build(name=MODEL).attrs["balance_sources"] is True
    assert build(name=MODEL, balance_sources=False).attrs["balance_sources"] is False
    with pytest.raises(RhetoricError):
        build(name=MODEL, context_chars=-1)
    with pytest.raises(RhetoricError):
        build(name=MODEL, warmup=1.5)


def three_sources():
    """Rows of three copies of a paper of one corpus, one of another and one without a source:
    ``(X, the doc without a source, sentences per paper, every row)``."""
    from spacy_rhetoric.extensions import SOURCE, set_doc_value

    nlp = spacy.blank("en")
    big, small, plain = (paper_doc(nlp, PAPER) for _ in range(3))
    set_doc_value(big, SOURCE, "coresc-art")
    set_doc_value(small, SOURCE, "mulms-az")
    n = len(PAPER)
    return as_X([big, big, big, small, plain]), plain, n, list(range(5 * n))


def test_sources_weigh_the_same_in_the_draws():
    """``balance_sources``: rows of a big and a small corpus (``doc._.rhetoric_source``)
    are drawn with equal total weight; rows of one corpus need no weights."""
    from spacy_rhetoric.ml.finetuned import source_weights

    X, plain, n, pick = three_sources()
    weights = source_weights(X, pick)
    assert weights is not None and weights.shape == (5 * n,)
    for rows in (slice(0, 3 * n), slice(3 * n, 4 * n), slice(4 * n, 5 * n)):  # 3 papers, 1 paper, no source
        assert weights[rows].sum() == pytest.approx(1 / 3)
    assert weights[0] == pytest.approx(weights[1]) and weights[3 * n] == pytest.approx(3 * weights[0])
    assert source_weights(X, list(range(3 * n))) is None  # one source: a plain permutation
    assert source_weights(as_X([plain, plain]), list(range(2 * n))) is None
    assert finetuned_settings_of(balance_sources=False).balance_sources is False
    assert finetuned_settings_of().balance_sources is True
    # source_power: each corpus's share ~ its size ** power (0.5: the square roots 3 ** 0.5 : 1 : 1)
    half = source_weights(X, pick, 0.5)
    root3 = 3 ** 0.5
    assert half[0:3 * n].sum() == pytest.approx(root3 / (root3 + 2))
    assert half[3 * n:4 * n].sum() == pytest.approx(1 / (root3 + 2))
    assert half[0] == pytest.approx(half[1])
    assert source_weights(X, pick, 1.0) == pytest.approx(numpy.full(5 * n, 1 / (5 * n)))  # as large as it is
    assert finetuned_settings_of(source_power=0.5).source_power == 0.5
    with pytest.raises(RhetoricError):
        finetuned_settings_of(source_power=1.5)


def test_batches_by_source_hold_one_corpus_each_with_the_corpora_shares():
    """``batch_by_source``: every batch's rows come from one source corpus, the corpora
    chosen with their shares of the draws; a corpus smaller than a batch is drawn with
    replacement. ``train_precision`` is one of auto, fp32, bf16."""
    from spacy_rhetoric.ml.finetuned import source_batches, source_groups, source_weights

    X, _, n, pick = three_sources()
    groups = source_groups(X, pick)
    assert sorted(len(rows) for rows in groups.values()) == [n, n, 3 * n]
    of_row = {int(position): source for source, rows in groups.items() for position in rows}
    size, n_batches = 4, 600
    order = source_batches(groups, source_weights(X, pick), n_batches, size, numpy.random.RandomState(0))
    assert order.shape == (n_batches * size,)
    batches = order.reshape(n_batches, size)
    firsts = [of_row[int(batch[0])] for batch in batches]
    assert all(of_row[int(i)] == first for batch, first in zip(batches, firsts) for i in batch)
    shares = {source: firsts.count(source) / n_batches for source in groups}
    assert all(abs(share - 1 / 3) < 0.07 for share in shares.values())  # power 0: every corpus alike
    big_batches = [batch for batch, first in zip(batches, firsts) if first == "coresc-art"]
    assert all(len(set(batch.tolist())) == size for batch in big_batches)  # no repeats within a batch
    again = source_batches(groups, source_weights(X, pick), n_batches, size, numpy.random.RandomState(0))
    assert numpy.array_equal(order, again)
    assert finetuned_settings_of().batch_by_source is False
    assert finetuned_settings_of(batch_by_source=True).batch_by_source is True
    assert finetuned_settings_of(train_precision="bf16").train_precision == "bf16"
    with pytest.raises(RhetoricError, match="train_precision"):
        finetuned_settings_of(train_precision="int8")


def finetuned_settings_of(**kwargs):
    from spacy_rhetoric.ml.finetuned import FinetunedSettings

    return FinetunedSettings(MODEL, **kwargs)


@pytest.mark.slow  # fine-tunes two layers of all-MiniLM-L6-v2 on six sentences
def test_the_finetuned_member_learns_is_silent_elsewhere_and_round_trips():
    from spacy_rhetoric.ml.finetuned import finetuned_expert

    nlp = spacy.blank("en")

    def member(precision="fp32"):
        return finetuned_expert(MODEL, epochs=30, learn_rate=1e-3, head_learn_rate=1e-2, batch_size=6,
                                max_length=48, frozen_layers=4, class_weight_power=0.0, precision=precision)

    m = member()
    counts = fit_members([m], as_X([paper_doc(nlp, PAPER), paper_doc(nlp, PAPER)]), [r[3] for r in PAPER] * 2,
                         LABELS)
    assert counts == {"finetuned_expert": {"docs": 1, "sentences": len(PAPER), "labelled": len(PAPER)}}
    shim = m.shims[0]
    assert shim.fitted and shim.cfg["classes"] == LABELS
    saved = srsly.msgpack_loads(shim.to_bytes())
    assert isinstance(saved["weights"], bytes) and saved["weights"][8:9] == b"{"  # safetensors: length + JSON
    X = as_X([paper_doc(nlp, PAPER, labels=False)])
    probs = m.predict(X)
    assert numpy.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    assert [LABELS[i] for i in probs.argmax(axis=1)] == [r[3] for r in PAPER]
    plain = m.predict(as_X([doc_from_sentences(nlp, ["We train a graph parser.", "Recall rises too."])]))
    assert numpy.allclose(plain, 1.0 / 3)  # not a paper: silent
    # the trained tensors are saved with the model (safetensors bytes, no pickle) and predict the same
    again = member()
    again.from_bytes(m.to_bytes())
    assert numpy.allclose(again.predict(X), probs, atol=1e-5)
    # the number format is the loading config's (a config override at spacy.load), not the saved one's
    in_bf16 = member("bf16").from_bytes(m.to_bytes())
    assert in_bf16.shims[0].precision == "bf16" and again.shims[0].precision == "fp32"
    assert numpy.allclose(in_bf16.predict(X), probs, atol=0.05)
    # on a device model (tests/device_sim.py: arrays that are not numpy's) it hands over device arrays
    with device_ops() as ops:
        on_device = member()
        on_device.from_bytes(m.to_bytes())
        X_device = (X[0], make_indices(ops, [doc_sentences(d)[1] for d in X[0]]))
        out = on_device.predict(X_device)
        assert is_device_array(out)
        assert numpy.allclose(host(out), probs, atol=1e-5)
    # a member stored the old way (top layers only) loads over the installed base model; tensors of another
    # shape (e.g. saved with other frozen layers) are refused with a clear error
    from spacy_rhetoric.ml.finetuned import FinetunedShim
    from spacy_rhetoric.ml.finetuned_io import top_tensors

    legacy = {"cfg": dict(saved["cfg"]), "tensors": top_tensors(shim._model)}
    old = member().from_bytes(m.to_bytes())
    old.shims[0].from_bytes(srsly.msgpack_dumps(legacy))
    assert numpy.allclose(old.predict(X), probs, atol=1e-5)
    legacy["cfg"]["frozen_layers"] = 3
    with pytest.raises(RhetoricError, match="do not fit"):
        FinetunedShim().from_bytes(srsly.msgpack_dumps(legacy))
    # no state outside the model: the torch modules go with it
    encoder = weakref.ref(m.shims[0]._model.encoder)
    del m, shim, again, on_device, old
    gc.collect()
    assert encoder() is None


@pytest.mark.slow  # fine-tunes two layers of all-MiniLM-L6-v2 on nine sentences in bfloat16
def test_a_member_of_all_docs_learns_papers_and_abstracts_in_bf16_batches_of_one_corpus():
    from spacy_rhetoric.extensions import SOURCE, set_doc_value
    from spacy_rhetoric.ml.finetuned import finetuned_expert

    nlp = spacy.blank("en")
    m = finetuned_expert(MODEL, docs="all", epochs=30, learn_rate=1e-3, head_learn_rate=1e-2, batch_size=3,
                         max_length=48, frozen_layers=4, class_weight_power=0.0, batch_by_source=True,
                         train_precision="bf16", precision="fp32")
    assert m.attrs["train_precision"] == "bf16" and m.attrs["batch_by_source"] is True and m.attrs["docs"] == "all"
    paper = paper_doc(nlp, PAPER)
    set_doc_value(paper, SOURCE, "papers")
    abstract_texts, abstract_labels = ["Graph parsers matter.", "We train a new parser.", "Scores rise by a lot."], \
        ["background", "method", "result"]
    abstract = doc_from_sentences(nlp, abstract_texts, sections=["abstract"] * 3, labels=abstract_labels)
    counts = fit_members([m], as_X([paper, abstract]), [r[3] for r in PAPER] + abstract_labels, LABELS)
    assert counts == {"finetuned_expert": {"docs": 2, "sentences": len(PAPER) + 3, "labelled": len(PAPER) + 3}}
    X = as_X([paper_doc(nlp, PAPER, labels=False), doc_from_sentences(nlp, abstract_texts, sections=["abstract"] * 3)])
    probs = m.predict(X)
    # it speaks on the paper and on the abstract (a member of all docs) and learned both
    assert [LABELS[i] for i in probs.argmax(axis=1)] == [r[3] for r in PAPER] + abstract_labels


@pytest.mark.slow  # runs all-MiniLM-L6-v2
def test_batches_of_similar_length_give_each_pair_its_own_states_in_order():
    import torch

    from spacy_rhetoric.ml.finetuned import FinetunedEncoder

    torch.manual_seed(0)
    runtime = FinetunedEncoder(MODEL, frozen_layers=2, n_context=2, n_labels=3, max_length=64)
    texts = ["We parse.", "The results show that the projected trees help every language we tried, by far.",
             "Treebanks are costly.", "Accuracy rises with the size of the bilingual lexicon on most languages.",
             "Code is online."]
    contexts = ["Intro | | ", "3 Results | a | b", "Intro | x | ", "3 Results | the prior one | the next one", ""]
    together = runtime.bottom(texts, contexts, batch_size=2)
    alone = [runtime.bottom([t], [c])[0] for t, c in zip(texts, contexts)]
    assert [tuple(a.shape) for a in together] == [tuple(b.shape) for b in alone]
    assert len({a.shape[0] for a in alone}) == len(texts)  # five lengths: the batches were reordered
    for a, b in zip(together, alone):
        assert numpy.allclose(a.float().numpy(), b.float().numpy(), atol=2e-2)
    context = numpy.random.RandomState(0).rand(len(texts), 2).astype("float32")
    probs, vectors = runtime.predict(texts, contexts, context, batch_size=2)
    assert vectors.shape == (len(texts), 0)  # no vector head
    each = numpy.concatenate([runtime.predict([t], [c], context[i : i + 1])[0] for i, (t, c) in
                              enumerate(zip(texts, contexts))])
    assert numpy.allclose(probs, each, atol=1e-3)
    # prediction runs every layer in one pass: the same as the training path (frozen states cached, then the top)
    cached, _ = runtime.top(runtime.bottom(texts, contexts), context)
    assert numpy.allclose(probs, torch.softmax(cached, -1).detach().numpy(), atol=2e-2)
    # int8 on the CPU: a quantized copy of the encoder, close to float32, the encoder itself untouched
    int8, _ = runtime.predict(texts, contexts, context, batch_size=2, precision="int8")
    assert runtime.inference_encoder("int8") is not runtime.encoder
    assert not numpy.allclose(int8, probs, atol=1e-7) and numpy.allclose(int8, probs, atol=0.1)
    assert numpy.allclose(runtime.predict(texts, contexts, context, batch_size=2)[0], probs, atol=1e-6)
    # bfloat16 autocast (emulated where the CPU lacks it): the encoder itself, close to float32, float32 out
    bf16, _ = runtime.predict(texts, contexts, context, batch_size=2, precision="bf16")
    assert runtime.inference_encoder("bf16") is runtime.encoder and bf16.dtype == numpy.float32
    assert not numpy.allclose(bf16, probs, atol=1e-7) and numpy.allclose(bf16, probs, atol=0.05)
    assert numpy.allclose(runtime.predict(texts, contexts, context, batch_size=2)[0], probs, atol=1e-6)


def test_auto_precision_is_bfloat16_only_where_the_hardware_has_it(monkeypatch):
    from spacy_rhetoric.ml import finetuned_encoder
    from spacy_rhetoric.ml.finetuned_encoder import resolve_precision

    monkeypatch.setattr(finetuned_encoder, "native_bf16", lambda device_type="cpu": True)
    assert resolve_precision("auto") == "bf16"
    monkeypatch.setattr(finetuned_encoder, "native_bf16", lambda device_type="cpu": False)
    assert resolve_precision("auto") == "fp32"
    assert resolve_precision("int8", "cuda") == "fp32" and resolve_precision("int8", "cpu") == "int8"
    assert resolve_precision("bf16", "cuda") == "bf16"
    with pytest.raises(RhetoricError, match="precision is one of"):
        resolve_precision("float16")


@pytest.mark.slow  # runs all-MiniLM-L6-v2
def test_sentence_pooling_reads_the_sentence_the_same_way_in_training_and_prediction():
    """``VectorHead.pooling = "sentence"``: the vector is the mean over the
    first segment of the pair (the sentence); the training path (cached
    bottom, top with ``first_segments``) and prediction agree, and the
    label head still reads the whole pair."""
    import torch

    from spacy_rhetoric.ml.finetuned import FinetunedEncoder, VectorHead

    with pytest.raises(RhetoricError, match="pooling"):
        VectorHead(width=8, loss=None, pooling="cls")
    torch.manual_seed(0)
    runtime = FinetunedEncoder(MODEL, frozen_layers=2, n_context=2, n_labels=3, max_length=32, vector_width=8,
                               vector_pooling="sentence")
    texts = ["We parse.", "The results show that the projected trees help every language we tried, by far."]
    contexts = ["Intro | | The results show", "3 Results | " + "word " * 40 + "| "]
    first = runtime.first_segments(texts, contexts)
    words = [len(runtime.tokenizer(t)["input_ids"]) for t in texts]  # [CLS] pieces [SEP]
    assert first[0] == words[0] and first[1] <= words[1] and first[1] < runtime.lengths(texts, contexts)[1]
    context = numpy.zeros((2, 2), dtype="float32")
    probs, vectors = runtime.predict(texts, contexts, context, batch_size=1)
    logits, pooled = runtime.top(runtime.bottom(texts, contexts), context, first)
    trained = torch.nn.functional.normalize(runtime.vector_head(pooled), dim=-1).detach().numpy()
    assert numpy.allclose(vectors, trained, atol=2e-2)
    assert numpy.allclose(probs, torch.softmax(logits, -1).detach().numpy(), atol=2e-2)
    # the pair's mean differs from the sentence's: the label head reads the pair
    _, whole = runtime.top(runtime.bottom(texts, contexts), context, runtime.lengths(texts, contexts))
    assert not numpy.allclose(whole.detach().numpy(), pooled.detach().numpy(), atol=1e-3)
    with pytest.raises(RhetoricError, match="first segment"):
        runtime.top(runtime.bottom(texts, contexts), context)


@pytest.mark.slow  # fine-tunes all-MiniLM-L6-v2's top layers for a few steps
@pytest.mark.parametrize("epochs", [0.5, 1.0])
def test_the_frozen_layers_run_only_on_the_sentences_the_steps_read(monkeypatch, epochs):
    from spacy_rhetoric.ml.finetuned import FinetunedEncoder, finetuned_expert

    seen = []
    original = FinetunedEncoder.bottom

    def spy(self, texts, contexts, batch_size=64):
        seen.append(len(texts))
        return original(self, texts, contexts, batch_size)

    monkeypatch.setattr(FinetunedEncoder, "bottom", spy)
    m = finetuned_expert(MODEL, epochs=epochs, batch_size=2, max_length=32, frozen_layers=4)
    fit_members([m], as_X([paper_doc(spacy.blank("en"), PAPER)]), [r[3] for r in PAPER], LABELS)
    steps = round(epochs * (len(PAPER) // 2))
    assert seen == [min(len(PAPER), 2 * steps)]
    assert m.shims[0].fitted


def _block_base_models(monkeypatch):
    """Every way to the base model out of reach: the name resolution and
    the mirror package raise, ``from_pretrained`` of a hub name or a path
    that is not local raises, and so does any socket connection."""
    import socket

    import transformers

    import spacy_rhetoric.util as util

    def refuse(*args, **kwargs):
        raise OSError("the base model is out of reach in this test")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(util, "resolve_hf_model", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    for auto in (transformers.AutoModel, transformers.AutoTokenizer):
        original = auto.from_pretrained.__func__

        def local_only(cls, path, *args, _original=original, **kwargs):
            if not str(path).startswith(tempfile_root()):
                refuse()
            return _original(cls, path, *args, **kwargs)

        monkeypatch.setattr(auto, "from_pretrained", classmethod(local_only))


def tempfile_root():
    import tempfile

    return tempfile.gettempdir()


def test_the_member_is_stored_whole_and_loads_without_its_base_model(tmp_path, monkeypatch):
    """The fine-tuned member's state holds the whole encoder (weights with
    their SHA-256, config, tokenizer files): it loads and predicts the same
    with its base model gone and nothing reachable; a changed byte of the
    weights is refused; the old state (top layers only) asks for the base
    model or a retrain."""
    import shutil

    from helpers import save_tiny_bert

    from spacy_rhetoric.ml.finetuned import FinetunedShim, finetuned_expert
    from spacy_rhetoric.ml.finetuned_io import top_tensors

    base = save_tiny_bert(tmp_path / "tiny-bert")
    nlp = spacy.blank("en")

    def member():
        return finetuned_expert(str(base), epochs=2, batch_size=3, max_length=32, frozen_layers=0)

    m = member()
    fit_members([m], as_X([paper_doc(nlp, PAPER)]), [r[3] for r in PAPER], LABELS)
    X = as_X([paper_doc(nlp, PAPER, labels=False)])
    probs = m.predict(X)
    data = m.to_bytes()
    legacy = {"cfg": dict(m.shims[0].cfg), "tensors": top_tensors(m.shims[0]._model)}
    shutil.rmtree(base)
    _block_base_models(monkeypatch)
    again = member().from_bytes(data)
    assert numpy.array_equal(again.predict(X), probs)
    saved = srsly.msgpack_loads(m.shims[0].to_bytes())
    assert {"weights", "sha256", "config", "tokenizer"} <= set(saved) and "vocab.txt" in saved["tokenizer"]
    tampered = bytearray(saved["weights"])
    tampered[-1] ^= 1
    with pytest.raises(RhetoricError, match="checksum"):
        FinetunedShim().from_bytes(srsly.msgpack_dumps({**saved, "weights": bytes(tampered)}))
    with pytest.raises(RhetoricError, match="retrain"):
        FinetunedShim().from_bytes(srsly.msgpack_dumps(legacy))
    # a stored config that asks for code of its own is refused, nothing of it run
    config = json.loads(saved["config"])
    config["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"}
    del config["model_type"]  # (with a model type transformers knows, its own classes are used and no code is asked for)
    with pytest.raises(RhetoricError, match="never runs code"):
        FinetunedShim().from_bytes(srsly.msgpack_dumps({**saved, "config": json.dumps(config)}))
