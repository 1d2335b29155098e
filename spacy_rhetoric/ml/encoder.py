"""Sentence encoder architecture: pooled token vectors -> one vector per sentence.

``spacy_rhetoric.SentenceEncoder.v1`` wraps ``build_sentence_pooler`` (see
``pooling.py``): a tok2vec (a small CNN, or a ``TransformerListener`` that
shares a transformer with other components) runs over the docs, each
sentence's token vectors are pooled ("mean", "first" = [CLS]-style first
token, "max", "last", or several joined by "+"), and an optional projection
(``Linear`` or ``Maxout``) maps them to ``projection_width``.

``spacy_rhetoric.ContextSentenceEncoder.v1`` adds what the context
classifier has: the pooled vectors of a doc's sentences form a sequence, a
context layer (the ``encoder`` block of ``ml.context``: window CNN or BiLSTM,
never across docs) runs over it, the
position features (relative position, is-first, is-last) are appended, and a
linear projection gives the output. A sentence's vector then encodes its
rhetorical move *in place* (the same words mean "background" in the first
sentence and "result" in the last), which is what abstract-level labels like
CSAbstruct's need. Train it on whole documents (``spacy.Corpus.v1`` and a
sequence batcher), not on one-sentence examples, or it never sees context.

Input: ``(docs, indices)`` with ``indices`` a Ragged array of ``(start, end)``
token offsets, one row per sentence, one length per doc. Output: a Floats2d
with one row per sentence, in the order of ``indices``. The vectors are NOT
normalised here: the metric losses decide how to treat the norm, and the
pipe L2-normalises the vectors it stores.
"""
from typing import Any, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Dropout, Linear, Maxout, Model, chain
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from .assembly import CONTEXT_TRUNK, architecture, sentence_model
from .classifier import build_context_trunk
from .pooling import build_sentence_pooler, ragged_to_array

PROJECTIONS = ("linear", "maxout")


ragged2array = ragged_to_array  # the old name of the shared layer


@registry.architectures("spacy_rhetoric.SentenceEncoder.v1")
def build_sentence_encoder(
    tok2vec: Model[List[Doc], List[Floats2d]],
    pooling: str = "mean",
    projection_width: Optional[int] = None,
    projection: str = "linear",
    maxout_pieces: int = 3,
    dropout: float = 0.0,
) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """Sentence vectors from pooled token vectors.

    tok2vec: token-vector layer (e.g. ``spacy.HashEmbedCNN.v2`` or
        ``spacy-transformers.TransformerListener.v1``).
    pooling: "mean", "first" ([CLS]-style), "last", "max" or a "+"-joined
        combination (concatenated), e.g. "mean+first".
    projection_width: width of an optional projection after pooling
        (None or 0: no projection, the output width is the pooled width).
    projection: "linear" or "maxout" (with ``maxout_pieces`` pieces,
        layer-normalised).
    dropout: dropout before the projection (only with a projection).
    """
    if projection not in PROJECTIONS:
        raise RhetoricError(f"Unknown projection {projection!r}: use one of {PROJECTIONS}")
    pooler = build_sentence_pooler(tok2vec, pooling)
    layers: List[Model] = [pooler, ragged_to_array()]
    if projection_width:
        if projection == "linear":
            proj = Linear(nO=projection_width)
            if dropout:
                proj = chain(Dropout(dropout), proj)
        else:
            proj = Maxout(nO=projection_width, nP=maxout_pieces, normalize=True, dropout=dropout)
        layers.append(proj)
    return _finish(chain(*layers), "sentence_encoder", tok2vec, pooler, pooling, projection_width)


@registry.architectures("spacy_rhetoric.ContextSentenceEncoder.v1")
@architecture(*CONTEXT_TRUNK[:-1], "projection_width", "dropout", width=256)
def build_context_sentence_encoder(tok2vec: Model, pooling: str, projection_width: Optional[int],
                                   **trunk: Any) -> Model:
    """Sentence vectors that see the sentence's neighbours and position.

    pooled token vectors -> Maxout to ``width`` -> the ``encoder`` block
    over each doc's sentence sequence (``spacy_rhetoric.ContextCNN.v1``:
    residual window blocks; ``ContextBiLSTM.v1``: a BiLSTM; its width the
    same ``width``) -> + position features -> Linear to
    ``projection_width`` (None or 0: the output is the context width + 3).
    Arguments: tok2vec, encoder (block), pooling ("mean"), width (256),
    maxout_pieces (3), projection_width (256), dropout (0.1)
    (``assembly.ARGUMENTS``).
    """
    pooler, in_context = build_context_trunk(tok2vec, pooling, **trunk)
    layers: List[Model] = [pooler, in_context]
    if projection_width:
        layers.append(Linear(nO=projection_width))
    return _finish(chain(*layers), "context_sentence_encoder", tok2vec, pooler, pooling, projection_width,
                   context=True)


def _finish(model: Model, name: str, tok2vec: Model, pooler: Model, pooling: str,
            projection_width: Optional[int], **attrs: Any) -> Model:
    model.name = name
    return sentence_model(model, tok2vec=tok2vec, pooler=pooler, pooling=pooling,
                          projection_width=projection_width or None, **attrs)
