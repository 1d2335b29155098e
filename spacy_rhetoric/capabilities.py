"""What a loaded pipeline writes, read from its components rather than from
one factory's name: the commands that need sentence vectors (``index``,
``search``, ``align``, ``map --model``) accept any pipeline with a
component that fills ``sent._.rhetoric_vector`` -- the sentence encoder, the
function classifier with a vector head (``VectorHead.v1``, as the demo
pipeline's), or a third-party component that declares it.

A component writes vectors when its factory's ``assigns`` names
``span._.rhetoric_vector`` and the component does not say otherwise through
a ``writes_vectors`` attribute (the classifier's is False without a vector
head)."""
from typing import List, Type

from .errors import RhetoricError

VECTOR_ASSIGN = "span._.rhetoric_vector"


def vector_components(nlp) -> List[str]:
    """The names of the components of ``nlp`` that set ``sent._.rhetoric_vector``."""
    names = []
    for name, pipe in nlp.pipeline:
        assigns = nlp.get_pipe_meta(name).assigns
        if VECTOR_ASSIGN in assigns and bool(getattr(pipe, "writes_vectors", True)):
            names.append(name)
    return names


def require_vectors(nlp, error: Type[RhetoricError] = RhetoricError, what: str = "this command") -> List[str]:
    """:func:`vector_components` of ``nlp``; ``error`` (one line naming the
    components) when there is none."""
    names = vector_components(nlp)
    if not names:
        raise error(
            f"the pipeline sets no sentence vectors (components: {', '.join(nlp.pipe_names) or 'none'}); "
            f"{what} needs sent._.rhetoric_vector: add a rhetoric_sentence_encoder, or a "
            "rhetoric_function_classifier with a vector head"
        )
    return names


def vector_only_disabled(nlp) -> List[str]:
    """The components a sentence vector does not need (to disable for
    queries): all but the vector components and the tok2vec/transformer they
    listen to; sentence splitters too (a query is one sentence)."""
    keep = set(vector_components(nlp))
    writers = set(keep)
    for name, pipe in nlp.pipeline:
        if set(getattr(pipe, "listening_components", None) or []) & writers:
            keep.add(name)
    return [n for n in nlp.pipe_names if n not in keep]
