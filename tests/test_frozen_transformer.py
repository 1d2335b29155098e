"""A transformer frozen from the start of training as a fixed feature
extractor (classifier_sections_minilm_cpu.cfg, the demo's classifier):
``spacy_rhetoric.initialize_frozen.v1`` loads its weights although
``spacy train`` skips frozen components, its listener reads
``doc._.trf_data``, and its weights do not move."""
import numpy
import pytest
import spacy
from helpers import benchmark_config, entry_point_names, save_tiny_bert
from spacy.tokens import DocBin

from spacy_rhetoric.extensions import set_sent_labels
from spacy_rhetoric.ml.transformer import make_initialize_frozen

SENTS = [
    ("Parsing is hard for languages with little data.", "background"),
    ("In this paper, we present a simple transfer method.", "objective"),
    ("The parser is trained on projected trees.", "method"),
    ("Experiments show that our approach improves accuracy.", "result"),
]


def _corpus(path, n=6):
    nlp = spacy.blank("en")
    docs = []
    for _ in range(n):
        doc = nlp(" ".join(s for s, _ in SENTS))
        starts = {0}
        offset = 0
        for sent, _ in SENTS:
            starts.add(len(nlp.make_doc(sent)) + offset)
            offset += len(nlp.make_doc(sent))
        for tok in doc:
            tok.is_sent_start = tok.i in starts
        set_sent_labels(doc, [label for _, label in SENTS])
        docs.append(doc)
    DocBin(store_user_data=True, docs=docs).to_disk(path)
    return path


def _weights(nlp):
    return {name: p.detach().numpy().copy()
            for name, p in nlp.get_pipe("transformer").model.transformer.named_parameters()}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """benchmarks/common/configs/classifier_sections_minilm_cpu.cfg trained 30 steps with a tiny BERT."""
    import torch
    from spacy.cli.train import train

    torch.set_num_threads(1)
    tmp_path = tmp_path_factory.mktemp("frozen")
    bert = save_tiny_bert(tmp_path / "bert")
    corpus = _corpus(tmp_path / "train.spacy")
    overrides = {"paths.train": str(corpus), "paths.dev": str(corpus), "training.max_steps": 30,
                 "training.eval_frequency": 30, "training.patience": 0,
                 "components.transformer.model.name.name": str(bert),
                 "components.rhetoric_function_classifier.model.width": 32,
                 "training.optimizer.learn_rate": 0.01}
    train(benchmark_config("classifier_sections_minilm_cpu"), tmp_path / "out", use_gpu=-1, overrides=overrides)
    return tmp_path / "out" / "model-last", bert


@pytest.mark.slow
def test_frozen_transformer_trains_the_classifier_only(trained):
    path, bert = trained
    nlp = spacy.load(path)
    assert nlp.pipe_names == ["sentencizer", "transformer", "tok2vec", "rhetoric_function_classifier"]
    # the transformer's weights are the pretrained ones: loaded at initialize, never updated
    from transformers import AutoModel

    pretrained = {name: p.detach().numpy() for name, p in AutoModel.from_pretrained(str(bert)).named_parameters()}
    trained = _weights(nlp)
    assert set(trained) == set(pretrained)
    for name, value in pretrained.items():
        numpy.testing.assert_array_equal(trained[name], value, err_msg=name)
    # the classifier learned the four sentences (they are its whole training set)
    doc = nlp(" ".join(s for s, _ in SENTS))
    assert [s._.rhetoric_label for s in doc.sents] == [label for _, label in SENTS]
    # and its token vectors are [own tok2vec | the transformer's]: zeroing the transformer's output
    # zeroes exactly the last 16 columns
    tok2vec = nlp.get_pipe("rhetoric_function_classifier").model.get_ref("tok2vec")
    before = tok2vec.predict([doc])[0]
    assert before.shape == (len(doc), 96 + 16) and numpy.abs(before[:, 96:]).sum() > 0
    doc._.trf_data.model_output.last_hidden_state[...] = 0
    after = tok2vec.predict([doc])[0]
    numpy.testing.assert_array_equal(after[:, :96], before[:, :96])
    assert not after[:, 96:].any()


@pytest.mark.slow
def test_assemble_keeps_a_nested_transformer_listener(trained):
    """The classifier listens to the transformer from inside a concatenate,
    which spaCy's replace_listeners cannot copy in: assemble sources the
    transformer as a component of its own and gives the classifier its own
    copy of the tok2vec (the "parser" here has a tok2vec of its own)."""
    from spacy_rhetoric.apps.assemble import assemble

    path, bert = trained

    def parser():
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        nlp.add_pipe("tok2vec")
        nlp.initialize()
        return nlp

    nlp, report = assemble(parser(), [(path, "rhetoric_function_classifier")], sections=False)
    assert nlp.pipe_names == ["sentencizer", "tok2vec", "transformer", "rhetoric_function_classifier"]
    assert "own copy of model.tok2vec.*.tok2vec <- tok2vec" in report["rhetoric_function_classifier"]
    assert nlp.get_pipe("transformer").listening_components == ["rhetoric_function_classifier"]
    assert "rhetoric_function_classifier" not in nlp.get_pipe("tok2vec").listening_components
    text = " ".join(s for s, _ in SENTS)
    expected = [s._.rhetoric_scores for s in spacy.load(path)(text).sents]
    got = [s._.rhetoric_scores for s in nlp(text).sents]
    for a, b in zip(expected, got):
        assert a == pytest.approx(b, abs=1e-5)
    # a pipeline that has a "transformer" already cannot take this one: a clear error
    taken = parser()
    taken.add_pipe("transformer", config={"model": {"@architectures": "spacy-transformers.TransformerModel.v3",
                                                    "name": str(bert)}})
    with pytest.raises(ValueError, match="from inside its model"):
        assemble(taken, [(path, "rhetoric_function_classifier")], sections=False)


def test_initialize_frozen_names_a_missing_component():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    with pytest.raises(ValueError, match="transformer"):
        make_initialize_frozen(["transformer"])(nlp)


def test_initialize_frozen_registered():
    assert "spacy_rhetoric.initialize_frozen.v1" in entry_point_names("spacy_callbacks")
    config = spacy.util.load_config(benchmark_config("classifier_sections_minilm_cpu"))
    assert config["training"]["frozen_components"] == ["transformer"]
    assert config["training"]["annotating_components"] == ["transformer"]
    assert config["initialize"]["before_init"]["@callbacks"] == "spacy_rhetoric.initialize_frozen.v1"
