"""How the registered sentence architectures are put together: their
arguments, declared once, and the refs and attrs the components read.

spaCy reads an architecture's arguments (names, types, defaults) from its
signature: the config schema is built from ``inspect.signature``. The
context classifier, the sequence classifier, the section-aware classifier
and the context encoder take the same groups of arguments (the
context trunk's, the section features', the sequence head's), so each
argument is declared once in :data:`ARGUMENTS` and :func:`architecture`
gives a builder the signature made of the names it lists, in that order
(a registered version's signature never changes: its list does not).

:func:`sentence_model` sets the refs (``tok2vec``, ``pooler``,
``output_layer``) and attrs (``context``...) the rhetoric components read.
"""
import functools
from inspect import Parameter, Signature
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Ragged

from ..section_headings import BACK_MATTER, OTHER

SentenceModel = Model[Tuple[List[Doc], Ragged], Floats2d]

# name -> (type, default) of every argument shared by the architectures.
ARGUMENTS: Dict[str, Tuple[Any, Any]] = {
    "tok2vec": (Model[List[Doc], List[Floats2d]], Parameter.empty),
    # the context trunk (``classifier.build_context_trunk``); ``encoder``: a
    # block of ``ml.context`` (spacy_rhetoric.ContextCNN.v1, ContextBiLSTM.v1)
    "encoder": (Model[Ragged, Ragged], Parameter.empty),
    "pooling": (str, "mean"),
    "width": (int, 128),
    "maxout_pieces": (int, 3),
    "dropout": (float, 0.1),
    # the section features and rule (``sections``)
    "hidden_size": (int, 0),
    "use_sections": (bool, True),
    "forced_sections": (Sequence[str], (BACK_MATTER,)),
    "forced_label": (str, OTHER),
    "section_scale": (float, 1.0),
    "acknowledgements": (bool, False),
    # the sequence head (``sequence``)
    "ngram_size": (int, 2),
    "ngram_length": (int, 2 ** 18),
    "decode": (str, "marginal"),
    "head_scale": (float, 1.0),
    "segments": (str, "sections"),
    "positions": (str, "sections"),
    # the encoder's output
    "projection_width": (Optional[int], 256),
    "nO": (Optional[int], None),
}
CONTEXT_TRUNK = ("tok2vec", "encoder", "pooling", "width", "maxout_pieces", "dropout")
SECTION_ARGUMENTS = ("hidden_size", "use_sections", "forced_sections", "forced_label", "section_scale",
                    "acknowledgements")
SEQUENCE_HEAD = ("ngram_size", "ngram_length", "decode", "head_scale")


def architecture(*names: str, **defaults: Any) -> Callable[[Callable[..., Model]], Callable[..., SentenceModel]]:
    """Decorator: the builder's signature is ``names`` (declared in
    :data:`ARGUMENTS`; ``defaults`` overrides theirs), and it is called with
    every argument, defaults applied, as a keyword."""
    params = [Parameter(name, Parameter.POSITIONAL_OR_KEYWORD, annotation=ARGUMENTS[name][0],
                        default=defaults.get(name, ARGUMENTS[name][1])) for name in names]
    signature = Signature(params, return_annotation=SentenceModel)

    def decorate(build: Callable[..., Model]) -> Callable[..., SentenceModel]:
        @functools.wraps(build)
        def builder(*args: Any, **kwargs: Any) -> SentenceModel:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return build(**bound.arguments)

        builder.__signature__ = signature  # type: ignore[attr-defined]
        builder.__annotations__ = {**{p.name: p.annotation for p in params}, "return": SentenceModel}
        return builder

    return decorate


def sentence_model(model: Model, *, tok2vec: Model, pooler: Model, output_layer: Optional[Model] = None,
                   **attrs: Any) -> Model:
    """``model`` with the refs the rhetoric components read (``tok2vec``,
    ``pooler`` and, for a classifier, ``output_layer``) and ``attrs``
    (``context``: it reads a doc's sentences as a sequence)."""
    model.set_ref("tok2vec", tok2vec)
    model.set_ref("pooler", pooler)
    if output_layer is not None:
        model.set_ref("output_layer", output_layer)
    model.attrs.update(attrs)
    return model
