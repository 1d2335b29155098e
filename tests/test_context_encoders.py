"""The context encoder blocks (``spacy_rhetoric.ContextCNN.v1``,
``spacy_rhetoric.ContextBiLSTM.v1``, ``ml/context.py``): the CNN builds the
layers the context trunk always had, the default classifier's network keeps
its parameter shapes, and a wrong block is one RhetoricError."""
import numpy
import pytest
import spacy
from helpers import cnn_encoder, lstm_encoder
from spacy.util import fix_random_seed, load_config, registry
from thinc.api import Maxout, chain, clone, expand_window, list2ragged, ragged2list, residual, with_array
from thinc.types import Ragged

import spacy_rhetoric  # noqa: F401 - registers the architectures
from spacy_rhetoric.errors import RhetoricError
from spacy_rhetoric.extensions import HEADING, set_span_values
from spacy_rhetoric.ml.classifier import build_context_sentence_classifier
from spacy_rhetoric.ml.context import build_context_bilstm, build_context_cnn
from spacy_rhetoric.ml.pooling import doc_sentence_offsets, make_indices
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.resources import config_path

TOK2VEC = {"@architectures": "spacy.HashEmbedCNN.v2", "pretrained_vectors": None, "width": 16, "depth": 1,
           "embed_size": 300, "window_size": 1, "maxout_pieces": 2, "subword_features": True}
SENTENCES = [("Neural parsers are widely used.", "abstract", "Abstract"),
             ("We propose a graph model.", "abstract", "Abstract"),
             ("Parsing is an old task.", "introduction", "1 Introduction"),
             ("We build a parser on graphs.", "method", "3 Method"),
             ("These numbers are given in the table.", "results", "4 Results"),
             ("We thank the reviewers.", None, "Acknowledgments")]
# The parameters of configs/classifier.cfg's network (its tok2vec: TOK2VEC) as
# the string-chosen encoder = "cnn", depth = 2, window_size = 1 built them.
NETWORK_PARAMS = [
    ("crf", "W", (5, 5)), ("crf", "start", (5,)), ("crf", "end", (5,)),
    ("linear", "W", (5, 141)), ("linear", "b", (5,)),
    ("sparse_linear", "W", (1310720,)), ("sparse_linear", "b", (5,)),
    ("maxout", "W", (128, 3, 32)), ("maxout", "b", (128, 3)), ("layernorm", "G", (128,)), ("layernorm", "b", (128,)),
    ("maxout", "W", (128, 3, 384)), ("maxout", "b", (128, 3)), ("layernorm", "G", (128,)), ("layernorm", "b", (128,)),
    ("maxout", "W", (128, 3, 384)), ("maxout", "b", (128, 3)), ("layernorm", "G", (128,)), ("layernorm", "b", (128,)),
    ("hashembed", "E", (300, 16)), ("hashembed", "E", (150, 16)), ("hashembed", "E", (150, 16)),
    ("hashembed", "E", (150, 16)),
    ("maxout", "W", (16, 3, 64)), ("maxout", "b", (16, 3)), ("layernorm", "G", (16,)), ("layernorm", "b", (16,)),
    ("maxout", "W", (16, 2, 48)), ("maxout", "b", (16, 2)), ("layernorm", "G", (16,)), ("layernorm", "b", (16,)),
]


def docs_and_indices(ops):
    nlp = spacy.blank("en")
    docs = []
    for d in range(3):
        rows = [SENTENCES[(d + i) % len(SENTENCES)] for i in range(3 + d)]
        doc = doc_from_sentences(nlp, [r[0] for r in rows], sections=[r[1] for r in rows])
        set_span_values(doc, HEADING, list(doc.sents), [r[2] for r in rows])
        docs.append(doc)
    return docs, make_indices(ops, [doc_sentence_offsets(doc) for doc in docs])


def params(model):
    return [(node.name, name, tuple(node.get_param(name).shape)) for node in model.walk()
            for name in node.param_names if node.has_param(name)]


def sentence_vectors(width: int) -> Ragged:
    rows = numpy.random.RandomState(0).uniform(-1, 1, (9, width)).astype("f")
    return Ragged(rows, numpy.asarray([2, 4, 3], dtype="i"))


@pytest.mark.parametrize("depth,window_size,pieces", [(2, 1, 3), (3, 2, 2)])
def test_cnn_block_is_the_context_cnn_of_before(depth, window_size, pieces):
    """The same layers, dimensions and, from one seed, the same output as the
    residual window CNN the trunk built for encoder = "cnn"."""
    width = 8
    block = residual(chain(expand_window(window_size=window_size),
                           Maxout(nO=width, nI=width * (window_size * 2 + 1), nP=pieces, dropout=0.1,
                                  normalize=True)))
    before = chain(ragged2list(), with_array(clone(block, depth), pad=window_size * depth), list2ragged())
    after = build_context_cnn(width, depth=depth, window_size=window_size, maxout_pieces=pieces, dropout=0.1)
    X = sentence_vectors(width)
    outputs = []
    for model in (before, after):
        fix_random_seed(0)
        model.initialize(X=X)
        outputs.append(model.predict(X).dataXd)
    assert [n.name for n in after.walk()] == [n.name for n in before.walk()]
    assert params(after) == params(before)
    numpy.testing.assert_array_equal(outputs[1], outputs[0])
    assert after.attrs["width"] == width


def test_default_classifier_network_keeps_its_parameters():
    config = load_config(config_path("classifier"), interpolate=True)
    network = dict(config["components"]["rhetoric_function_classifier"]["model"]["network"], tok2vec=TOK2VEC)
    assert network["encoder"]["@architectures"] == "spacy_rhetoric.ContextCNN.v1"
    assert network["encoder"]["width"] == network["width"]
    model = registry.resolve({"m": network})["m"]
    model.set_dim("nO", 5)
    model.initialize(X=docs_and_indices(model.ops))
    assert params(model) == NETWORK_PARAMS


@pytest.mark.parametrize("encoder", [cnn_encoder(16), lstm_encoder(16), cnn_encoder(16, depth=0)],
                         ids=["cnn", "lstm", "none"])
def test_blocks_in_a_classifier(encoder):
    config = {"@architectures": "spacy_rhetoric.ContextSentenceClassifier.v1", "width": 16, "dropout": 0.0,
              "encoder": encoder, "tok2vec": TOK2VEC, "nO": 4}
    model = registry.resolve({"m": config})["m"]
    X = docs_and_indices(model.ops)
    model.initialize(X=X)
    probs = model.predict(X)
    assert probs.shape == (12, 4)
    numpy.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_bilstm_needs_an_even_width():
    with pytest.raises(RhetoricError, match="even width"):
        build_context_bilstm(15)
    with pytest.raises(RhetoricError, match="even width"):
        registry.resolve({"m": lstm_encoder(15)})


@pytest.mark.parametrize("block", [{"depth": 0}, {"window_size": 0}, {"maxout_pieces": 0}])
def test_cnn_settings_are_checked(block):
    if "depth" in block:  # depth 0: no layer, the vectors as they are
        assert build_context_cnn(8, **block).name == "noop"
        return
    with pytest.raises(RhetoricError, match="positive integer"):
        build_context_cnn(8, **block)


def test_encoder_of_another_width_is_refused():
    t2v = registry.resolve({"t": TOK2VEC})["t"]
    with pytest.raises(RhetoricError, match=r"encoder's width \(32\) is not the network's width \(16\)"):
        build_context_sentence_classifier(t2v, build_context_cnn(32), width=16)
    config = {"@architectures": "spacy_rhetoric.SectionAwareNetwork.v1", "width": 16, "encoder": lstm_encoder(8),
              "tok2vec": TOK2VEC}
    with pytest.raises(RhetoricError, match="not the network's width"):
        registry.resolve({"m": config})


def test_encoder_must_be_a_block():
    t2v = registry.resolve({"t": TOK2VEC})["t"]
    with pytest.raises(RhetoricError, match="registered block"):
        build_context_sentence_classifier(t2v, "cnn", width=16)
