"""The non-contextual part of CitRet (§3.2): Word Mover's Distance with
gensim ``KeyedVectors.wmdistance`` (POT solves the transport problem).

Word vectors are either a Word2Vec model the project trains on the full text
of the CL-SciSumm reference papers (:func:`train_word2vec`,
``spacy-rhetoric link-word2vec``), or any vectors file the user points to
(:func:`load_vectors`: word2vec binary ``.bin``/``.bin.gz`` such as the
GoogleNews vectors, or word2vec text ``.txt``/``.vec``). gensim
``KeyedVectors.save`` files are pickles and are refused; the project writes
word2vec binary (:func:`save_vectors`). Nothing is downloaded.

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

from ..errors import RhetoricError
from .text import preprocess

logger = logging.getLogger(__name__)


WORD2VEC_DEFAULTS = {"vector_size": 100, "window": 5, "min_count": 2, "epochs": 5, "sg": 0, "workers": 1, "seed": 0}


def train_word2vec(sentences: Iterable[Sequence[str]], **options):
    """Train a gensim Word2Vec on pre-processed token lists; return its
    KeyedVectors. ``options`` are gensim ``Word2Vec`` arguments over
    ``WORD2VEC_DEFAULTS`` (CBOW, 100 d, window 5, min_count 2, 5 epochs, one
    worker, seed 0)."""
    from gensim.models import Word2Vec

    corpus = [list(s) for s in sentences if len(s) > 0]
    if not corpus:
        raise RhetoricError("train_word2vec: no non-empty sentences to train on")
    options = {**WORD2VEC_DEFAULTS, **options}
    model = Word2Vec(sentences=corpus, **options)
    if len(model.wv) == 0:
        raise RhetoricError(f"train_word2vec: no word occurs min_count={options['min_count']} times")
    return model.wv


GZIP_HEAD = b"\x1f\x8b"
TEXT_SUFFIXES = (".txt", ".vec", ".txt.gz", ".vec.gz")


def _is_text_format(path: Path) -> bool:
    return path.name.lower().endswith(TEXT_SUFFIXES)


def check_word2vec_header(path: Path) -> None:
    """Refuse anything that is not a word2vec file before gensim reads it:
    the first line must be ``<number of words> <dimensions>``, and the file
    must be large enough to hold what it declares (gensim allocates
    words x dimensions floats from the header alone)."""
    import gzip

    with path.open("rb") as fh:
        head = fh.read(2)
    if head == GZIP_HEAD:
        with gzip.open(path, "rb") as fh:
            first = fh.readline(200)
    else:
        with path.open("rb") as fh:
            first = fh.readline(200)
    parts = first.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        words, dim = int(parts[0]), int(parts[1])
        # a binary row holds dim float32s, a text row at least dim "0 "s
        need = words * dim * (2 if _is_text_format(path) else 4)
        size = path.stat().st_size
        room = size * 1032 if head == GZIP_HEAD else size  # deflate expands at most ~1032x
        if need > room:
            raise RhetoricError(f"{path}:1: the header declares {words:,} words x {dim:,} dimensions "
                             f"(at least {need:,} bytes) but the file has {size:,} bytes: truncated or not "
                             "a word2vec file")
        return
    if head[:1] == b"\x80" or path.suffix.lower() in (".kv", ".model", ".pkl", ".pickle"):
        raise RhetoricError(
            f"{path}: not a word2vec file (looks like a pickle, e.g. gensim KeyedVectors.save / .kv); "
            "pickles can run code when loaded and are refused. Give word vectors in word2vec binary "
            "(.bin) or text (.txt/.vec) format, e.g. re-run spacy-rhetoric link-word2vec"
        )
    raise RhetoricError(
        f"{path}:1: not a word2vec file: the first line must be '<words> <dimensions>', "
        f"got {first[:60]!r}; give word2vec binary (.bin) or text (.txt/.vec) vectors"
    )


def load_vectors(path: Union[str, Path]):
    """Word vectors from a word2vec file: text when the name ends in ``.txt``
    / ``.vec`` (optionally ``.gz``), else binary (any name, e.g. ``.bin``,
    ``.bin.gz``). Nothing else is read: gensim ``KeyedVectors.save`` files
    (``.kv``) are pickles and are refused with a ValueError, as is any file
    whose first line is not the word2vec header."""
    from gensim.models import KeyedVectors

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"word vectors file {path} does not exist")
    if not path.is_file():
        raise RhetoricError(f"word vectors path {path} is not a file")
    check_word2vec_header(path)
    try:
        return KeyedVectors.load_word2vec_format(str(path), binary=not _is_text_format(path))
    except (ValueError, EOFError, UnicodeDecodeError, IndexError) as err:
        raise RhetoricError(f"{path}: cannot read word2vec vectors: {err}") from None


def save_vectors(kv, path: Union[str, Path]) -> None:
    """Write ``kv`` as word2vec text (``.txt``/``.vec``) or binary (any other
    name), atomically; :func:`load_vectors` reads it back."""
    from ..io import atomic_path

    path = Path(path)
    if path.name.lower().endswith(".gz"):
        raise RhetoricError(f"{path}: compressed output is not supported, use a .bin or .txt name")
    with atomic_path(path) as tmp:
        kv.save_word2vec_format(str(tmp), binary=not _is_text_format(path))


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
