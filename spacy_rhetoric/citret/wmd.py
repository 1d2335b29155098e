"""The non-contextual part of CitRet (§3.2): Word Mover's Distance with
gensim ``KeyedVectors.wmdistance`` (POT solves the transport problem).

Word vectors are either a Word2Vec model the project trains on the full text
of the CL-SciSumm reference papers (:func:`train_word2vec`,
``spacy-rhetoric link-word2vec``), or any vectors file the user points to
(:func:`load_vectors`: gensim ``KeyedVectors.save`` files, word2vec binary
``.bin``/``.bin.gz`` such as the GoogleNews vectors, or word2vec text
``.txt``/``.vec``). Nothing is downloaded.

gensim normalises the word vectors to unit length (``norm=True``, its
default since 4.0) before computing distances.

The paper ranks by the sum of the cosine distance and the WMD (the authors'
code sorts ``cosine distance + WMD`` ascending), so the non-contextual
*similarity* added to the cosine similarity is ``-WMD``: ranking by
``cos - WMD`` is the same ranking.
"""
import logging
import math
from pathlib import Path
from typing import Iterable, List, Sequence, Union

import numpy

from .text import preprocess

logger = logging.getLogger(__name__)


def train_word2vec(
    sentences: Iterable[Sequence[str]],
    *,
    vector_size: int = 100,
    window: int = 5,
    min_count: int = 2,
    epochs: int = 5,
    sg: int = 0,
    workers: int = 1,
    seed: int = 0,
):
    """Train a gensim Word2Vec on pre-processed token lists; return its KeyedVectors."""
    from gensim.models import Word2Vec

    corpus = [list(s) for s in sentences if len(s) > 0]
    if not corpus:
        raise ValueError("train_word2vec: no non-empty sentences to train on")
    model = Word2Vec(
        sentences=corpus,
        vector_size=vector_size,
        window=window,
        min_count=min_count,
        epochs=epochs,
        sg=sg,
        workers=workers,
        seed=seed,
    )
    if len(model.wv) == 0:
        raise ValueError(f"train_word2vec: no word occurs min_count={min_count} times")
    return model.wv


def load_vectors(path: Union[str, Path]):
    """Load word vectors from a gensim KeyedVectors file or a word2vec file."""
    from gensim.models import KeyedVectors

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"word vectors file {path} does not exist")
    name = path.name.lower()
    if name.endswith((".bin", ".bin.gz")):
        return KeyedVectors.load_word2vec_format(str(path), binary=True)
    if name.endswith((".txt", ".vec", ".txt.gz", ".vec.gz")):
        return KeyedVectors.load_word2vec_format(str(path), binary=False)
    return KeyedVectors.load(str(path))


def wmd_distances(kv, query: Sequence[str], candidates: Sequence[Sequence[str]]) -> numpy.ndarray:
    """``kv.wmdistance(query, c)`` for every candidate token list ``c``.

    gensim returns ``inf`` when one side has no word in the vocabulary; those
    stay ``inf`` here (see :func:`wmd_similarities`).
    """
    out = numpy.empty(len(candidates), dtype="float64")
    q = [w for w in query if w in kv.key_to_index]
    for i, cand in enumerate(candidates):
        c = [w for w in cand if w in kv.key_to_index]
        if not q or not c:
            out[i] = math.inf
        else:
            out[i] = kv.wmdistance(q, c)
    return out


def wmd_similarities(kv, query: Sequence[str], candidates: Sequence[Sequence[str]]) -> numpy.ndarray:
    """Similarity ``-WMD`` of ``query`` to each candidate.

    A pair without any in-vocabulary word on one side has no WMD; it gets the
    largest finite distance of this query (it is never ranked above a pair
    that has one), or 0 for every candidate when no pair has a finite WMD.
    """
    dist = wmd_distances(kv, query, candidates)
    finite = numpy.isfinite(dist)
    if not finite.any():
        return numpy.zeros_like(dist)
    dist[~finite] = dist[finite].max()
    return -dist


def tokens(text: str) -> List[str]:
    """The paper's pre-processing (see :mod:`.text`)."""
    return preprocess(text)
