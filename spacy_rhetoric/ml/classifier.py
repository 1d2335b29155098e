"""Sentence classification architectures for ``rhetoric_function_classifier``.

Both take ``(docs, indices)`` (see ``pooling.py``: a Ragged array of
``(start, end)`` token offsets, one length per doc) and return a Floats2d of
label probabilities, one row per sentence in the order of ``indices``.

- ``spacy_rhetoric.SentenceClassifier.v1``: each sentence on its own:
  pooled token vectors -> (optional Maxout hidden layer) -> Softmax.
- ``spacy_rhetoric.ContextSentenceClassifier.v1``: a sentence's label also
  depends on its neighbours and on where it sits in the document. The
  sentence vectors of each doc form a sequence; a context encoder, the
  ``encoder`` block (``ml.context``: ``spacy_rhetoric.ContextCNN.v1``, a
  residual window-Maxout CNN, or ``spacy_rhetoric.ContextBiLSTM.v1``), runs
  over that sequence, never across doc boundaries, and its output is
  concatenated with position features (relative position, is-first, is-last)
  before the Softmax.
"""
from typing import Any, Callable, List, Optional, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Dropout, Maxout, Model, Softmax, chain, with_array
from thinc.types import Floats2d, Ragged

from .assembly import CONTEXT_TRUNK, architecture, sentence_model
from .context import check_encoder
from .pooling import build_sentence_pooler, ragged_to_array

N_POSITION_FEATURES = 3


def position_features(ops, lengths) -> Floats2d:
    """One row per sentence: relative position in its doc (0 for the first,
    1 for the last; 0 for a single sentence), is-first, is-last. ``lengths``:
    an array of ``ops`` or a list; built on the host and copied to the ops'
    device once."""
    if not isinstance(lengths, (list, tuple)):
        lengths = ops.to_numpy(lengths)
    lengths = [int(n) for n in lengths]
    feats = numpy.zeros((sum(lengths), N_POSITION_FEATURES), dtype="f")
    row = 0
    for n in lengths:
        if n:
            if n > 1:
                feats[row : row + n, 0] = numpy.arange(n) / (n - 1)
            feats[row, 1] = 1.0
            feats[row + n - 1, 2] = 1.0
        row += n
    return ops.asarray2f(feats)


def with_positions(context: Model[Ragged, Ragged]) -> Model[Ragged, Floats2d]:
    """Run ``context`` over the sentence sequence and append the position
    features of each sentence to its output row."""
    return Model(
        "with_positions",
        _with_positions_forward,
        init=_with_positions_init,
        layers=[context],
        dims={"nO": None},
    )


def _with_positions_init(model: Model, X: Optional[Ragged] = None, Y=None) -> None:
    context = model.layers[0]
    context.initialize(X=X)
    if X is not None:
        width = context.predict(X).dataXd.shape[1]
        model.set_dim("nO", width + N_POSITION_FEATURES, force=True)
    elif context.has_dim("nO") and context.get_dim("nO") is not None:
        model.set_dim("nO", context.get_dim("nO") + N_POSITION_FEATURES, force=True)


def append_positions(ops, Y: Ragged, lengths) -> Tuple[Floats2d, Callable[[Floats2d], Ragged]]:
    """``Y``'s rows with the position features of sequences of ``lengths``
    appended, and the function taking the output's gradient back to ``Y``'s."""
    width = Y.dataXd.shape[1]
    out = ops.xp.hstack([Y.dataXd, position_features(ops, lengths)])

    def to_Y(dOut: Floats2d) -> Ragged:
        return Ragged(ops.xp.ascontiguousarray(dOut[:, :width]), Y.lengths)

    return out, to_Y


def _with_positions_forward(model: Model, X: Ragged, is_train: bool):
    context = model.layers[0]
    Y, bp_context = context(X, is_train)
    out, to_Y = append_positions(model.ops, Y, X.lengths)

    def backprop(dOut: Floats2d) -> Ragged:
        return bp_context(to_Y(dOut))

    return out, backprop


def build_context_trunk(
    tok2vec: Model[List[Doc], List[Floats2d]],
    pooling: str,
    width: int,
    *,
    encoder: Model[Ragged, Ragged],
    maxout_pieces: int,
    dropout: float,
) -> Tuple[Model, Model[Ragged, Floats2d]]:
    """The part the context classifier and the context encoder share: the
    sentence pooler, and (pooled vectors -> Maxout to ``width`` -> the
    ``encoder`` block over each doc's sentences (``ml.context``) -> +
    position features)."""
    encoder = check_encoder(encoder, width)
    pooler = build_sentence_pooler(tok2vec, pooling)
    project = with_array(Maxout(nO=width, nP=maxout_pieces, dropout=dropout, normalize=True))
    return pooler, with_positions(chain(project, encoder))


@registry.architectures("spacy_rhetoric.SentenceClassifier.v1")
def build_sentence_classifier(
    tok2vec: Model[List[Doc], List[Floats2d]],
    pooling: str = "mean",
    hidden_size: int = 128,
    dropout: float = 0.1,
    nO: Optional[int] = None,
) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """Isolated-sentence classifier: pooled sentence vector -> (Maxout
    hidden layer when hidden_size > 0) -> Softmax over the labels."""
    pooler = build_sentence_pooler(tok2vec, pooling)
    output_layer = Softmax(nO=nO)
    layers = [pooler, ragged_to_array()]
    if hidden_size > 0:
        layers.append(Maxout(nO=hidden_size, nP=3, dropout=dropout, normalize=True))
    layers.append(output_layer)
    return sentence_model(chain(*layers), tok2vec=tok2vec, pooler=pooler, output_layer=output_layer,
                          context=False)


@registry.architectures("spacy_rhetoric.ContextSentenceClassifier.v1")
@architecture(*CONTEXT_TRUNK, "nO")
def build_context_sentence_classifier(tok2vec: Model, nO: Optional[int], **trunk: Any) -> Model:
    """Classifier that sees a sentence's neighbours and position.

    pooled sentence vectors -> Maxout projection to ``width`` (``maxout_pieces``
    pieces) -> the ``encoder`` block over each doc's sentence sequence
    (``spacy_rhetoric.ContextCNN.v1``: window CNN; ``ContextBiLSTM.v1``: BiLSTM;
    its width the same ``width``) -> concatenated with (relative position,
    is-first, is-last) -> Dropout -> Softmax.

    Arguments: tok2vec, encoder (blocks), pooling ("mean"), width (128),
    maxout_pieces (3), dropout (0.1), nO (``assembly.ARGUMENTS``).
    """
    pooler, in_context = build_context_trunk(tok2vec, **trunk)
    output_layer = Softmax(nO=nO)
    return sentence_model(chain(pooler, in_context, Dropout(trunk["dropout"]), output_layer), tok2vec=tok2vec,
                          pooler=pooler, output_layer=output_layer, context=True)
