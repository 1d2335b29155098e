"""Pre-processing of CitRet (§3, Appendix C) and shared n-grams (§3.1.2).

The paper lowercases, removes stop words and removes special characters
(NLTK + regular expressions). NLTK's stop-word list needs a download, so
spaCy's English stop-word list is used instead; a "special character" is any
character that is not a letter or a digit, and one-character leftovers are
dropped with them.
"""
import re
from typing import Iterable, List, Sequence, Tuple

from spacy.lang.en.stop_words import STOP_WORDS

from ..errors import RhetoricError

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def preprocess(text: str, *, stop_words: Iterable[str] = STOP_WORDS) -> List[str]:
    """Lowercased content tokens of ``text``: no stop words, no special characters."""
    stop = stop_words if isinstance(stop_words, (set, frozenset)) else set(stop_words)
    tokens = _NON_ALNUM.sub(" ", text.lower()).split()
    return [t for t in tokens if len(t) > 1 and t not in stop]


def ngrams(tokens: Sequence[str], n: int) -> List[Tuple[str, ...]]:
    """The n-grams of ``tokens`` in order (an empty list when there are fewer than n)."""
    if n < 1:
        raise RhetoricError(f"n-gram order must be >= 1, got {n}")
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def shared_ngrams(a: Sequence[str], b: Sequence[str], n: int = 2) -> List[str]:
    """The n-grams that token sequences ``a`` and ``b`` share, as strings.

    Each shared n-gram is returned once, in its order of first occurrence in
    ``a`` (so the result is deterministic), words joined by a space.
    """
    in_b = set(ngrams(b, n))
    out: List[str] = []
    seen = set()
    for gram in ngrams(a, n):
        if gram in in_b and gram not in seen:
            seen.add(gram)
            out.append(" ".join(gram))
    return out


def append_keywords(text: str, keywords: Sequence[str]) -> str:
    """The weighted-contextual-embedding input: ``text`` followed by the
    shared keywords (the paper concatenates them to both sentences of the
    pair, so mean pooling gives them more weight)."""
    if not keywords:
        return text
    return text + " " + " ".join(keywords)
