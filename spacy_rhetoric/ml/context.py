"""The context encoders: registered blocks that run over the sequence of a
doc's sentence vectors (Ragged -> Ragged, one sequence per doc, never across
docs), the ``encoder`` block of the context architectures
(``ContextSentenceClassifier.v1``, ``SequenceSentenceClassifier.v1``,
``SectionAwareSentenceClassifier.v3``, ``SectionAwareNetwork.v1``,
``ContextSentenceEncoder.v1``), as spaCy's ``MaxoutWindowEncoder.v2`` and
``TorchBiLSTMEncoder.v1`` are the ``encode`` block of its ``Tok2Vec.v2``:

- ``spacy_rhetoric.ContextCNN.v1``: ``depth`` residual (window -> Maxout ->
  LayerNorm) blocks, padded between docs so windows never see another doc's
  sentences;
- ``spacy_rhetoric.ContextBiLSTM.v1``: a BiLSTM (thinc ``PyTorchLSTM``) of
  ``depth`` layers over each doc's sentence sequence.

A block's ``width`` is the width of the vectors it reads and writes, the
surrounding architecture's ``width``; a config states it once and
interpolates it into the block, as spaCy's configs do::

    [components.rhetoric_function_classifier.model.encoder]
    @architectures = "spacy_rhetoric.ContextCNN.v1"
    width = ${components.rhetoric_function_classifier.model.width}
    depth = 2
    window_size = 1
    maxout_pieces = 3
    dropout = 0.1

The block records it in ``attrs["width"]``, and :func:`check_encoder` (called
by the architectures) refuses a block whose width is not theirs.
"""
from typing import Any

from spacy.util import registry
from thinc.api import (
    Maxout,
    Model,
    PyTorchLSTM,
    chain,
    clone,
    expand_window,
    list2ragged,
    noop,
    ragged2list,
    residual,
    with_array,
)
from thinc.types import Ragged

from ..errors import RhetoricError

ContextEncoder = Model[Ragged, Ragged]


def _positive(name: str, value: int, block: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RhetoricError(f"{block}: {name} must be a positive integer, got {value!r}")


def _encoder(model: Model, width: int, kind: str) -> ContextEncoder:
    model.attrs["width"] = width
    model.attrs["context_encoder"] = kind
    return model


@registry.architectures("spacy_rhetoric.ContextCNN.v1")
def build_context_cnn(width: int, depth: int = 2, window_size: int = 1, maxout_pieces: int = 3,
                      dropout: float = 0.1) -> ContextEncoder:
    """``depth`` residual blocks (window of ``window_size`` sentences per side
    -> Maxout with ``maxout_pieces`` pieces, layer-normalised, ``dropout``)
    over each doc's sentence vectors of ``width``; ``depth`` 0: no layer (the
    vectors as they are)."""
    _positive("width", width, "spacy_rhetoric.ContextCNN.v1")
    if depth <= 0:
        return _encoder(noop(), width, "cnn")
    _positive("window_size", window_size, "spacy_rhetoric.ContextCNN.v1")
    _positive("maxout_pieces", maxout_pieces, "spacy_rhetoric.ContextCNN.v1")
    block = residual(
        chain(
            expand_window(window_size=window_size),
            Maxout(nO=width, nI=width * (window_size * 2 + 1), nP=maxout_pieces, dropout=dropout, normalize=True),
        )
    )
    seq = with_array(clone(block, depth), pad=window_size * depth)
    return _encoder(chain(ragged2list(), seq, list2ragged()), width, "cnn")


@registry.architectures("spacy_rhetoric.ContextBiLSTM.v1")
def build_context_bilstm(width: int, depth: int = 2, dropout: float = 0.1) -> ContextEncoder:
    """A BiLSTM of ``depth`` layers over each doc's sentence vectors of
    ``width`` (even: each direction gives half), ``dropout`` between layers;
    ``depth`` 0: no layer."""
    _positive("width", width, "spacy_rhetoric.ContextBiLSTM.v1")
    if depth <= 0:
        return _encoder(noop(), width, "lstm")
    if width % 2:
        raise RhetoricError(f"spacy_rhetoric.ContextBiLSTM.v1 needs an even width, got {width}")
    lstm = PyTorchLSTM(nO=width, nI=width, bi=True, depth=depth, dropout=dropout)
    return _encoder(chain(ragged2list(), lstm, list2ragged()), width, "lstm")


def check_encoder(encoder: Any, width: int) -> ContextEncoder:
    """``encoder`` if it is a thinc Model whose width (``attrs["width"]``,
    where it states one) is ``width``; else a RhetoricError."""
    if not isinstance(encoder, Model):
        raise RhetoricError(
            f"The context encoder must be a registered block (e.g. spacy_rhetoric.ContextCNN.v1 or "
            f"spacy_rhetoric.ContextBiLSTM.v1 in an [...encoder] section), got {encoder!r}")
    own = encoder.attrs.get("width")
    if own is not None and own != width:
        raise RhetoricError(
            f"The context encoder's width ({own}) is not the network's width ({width}): set the encoder "
            f"block's width to the network's (width = ${{...width}} of the block around it)")
    return encoder
