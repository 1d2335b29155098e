"""Transformer windows made of whole sentences.

spacy-transformers cuts a Doc into windows with a span getter.
``strided_spans`` (fixed token windows) cuts sentences in half and gives a
sentence near a window edge only one side of its context; ``sent_spans``
shows the transformer one sentence at a time, with no context at all. For
sentence-level rhetorical labels a sentence should be read *with* its
neighbours, as in Cohan et al. (2019), where a whole abstract is one input.

``spacy_rhetoric.sentence_windows.v1`` packs consecutive whole sentences into
windows of at most ``max_tokens`` spaCy tokens: a CSAbstruct-size abstract
(median ~190 tokens) becomes a single window, a paper becomes a sequence of
windows that never split a sentence. With ``overlap`` > 0 each window after
the first also repeats up to that many tokens of the sentences before it
(whole sentences only, as many as fit), so a sentence at a window start still
sees what precedes it; listeners average the vectors of a token that occurs in
several windows. A sentence longer than ``max_tokens`` is cut into pieces of
``max_tokens`` tokens (the only place a sentence is split). Every token is in
at least one window, in document order.

The token budget is in spaCy tokens, not word pieces: keep ``max_tokens``
well under the transformer's limit (MiniLM: 512 word pieces; scientific text
runs ~1.2-1.4 word pieces per token). A window the tokenizer still finds too
long is handled by spacy-transformers' own truncation (a warning, and the cut
tokens get zero vectors).

Docs without sentence boundaries are treated as one sentence.
"""
from typing import Callable, Iterable, List, Tuple

from spacy.tokens import Doc, Span
from spacy_transformers.util import registry

from ..errors import RhetoricError

SpannerT = Callable[[Iterable[Doc]], List[List[Span]]]


def _sentence_bounds(doc: Doc) -> List[Tuple[int, int]]:
    if not len(doc):
        return []
    if doc.has_annotation("SENT_START"):
        return [(s.start, s.end) for s in doc.sents]
    return [(0, len(doc))]


def _pieces(bounds: List[Tuple[int, int]], max_tokens: int) -> List[Tuple[int, int]]:
    """Sentences, with any sentence longer than max_tokens cut into pieces."""
    out = []
    for start, end in bounds:
        while end - start > max_tokens:
            out.append((start, start + max_tokens))
            start += max_tokens
        out.append((start, end))
    return out


def sentence_windows(doc: Doc, max_tokens: int, overlap: int = 0) -> List[Span]:
    """Windows of whole consecutive sentences of ``doc`` (see module doc)."""
    pieces = _pieces(_sentence_bounds(doc), max_tokens)
    windows: List[Span] = []
    i = 0
    while i < len(pieces):
        # new material: as many whole sentences as fit in the budget (at least one)
        j = i + 1
        while j < len(pieces) and pieces[j][1] - pieces[i][0] <= max_tokens:
            j += 1
        new_start, end = pieces[i][0], pieces[j - 1][1]
        # context: earlier whole sentences, while they fit in overlap and the budget
        k = i
        while (
            overlap > 0
            and k > 0
            and new_start - pieces[k - 1][0] <= overlap
            and end - pieces[k - 1][0] <= max_tokens
        ):
            k -= 1
        start = pieces[k][0]
        windows.append(doc[start:end])
        i = j
    return windows


def get_sentence_windows(docs: Iterable[Doc], max_tokens: int, overlap: int = 0) -> List[List[Span]]:
    return [sentence_windows(doc, max_tokens, overlap) for doc in docs]


@registry.span_getters("spacy_rhetoric.sentence_windows.v1")
def configure_sentence_windows(max_tokens: int = 256, overlap: int = 0) -> SpannerT:
    """Span getter: windows of whole consecutive sentences, at most
    ``max_tokens`` spaCy tokens each, optionally repeating up to ``overlap``
    tokens of preceding sentences as left context."""
    if max_tokens < 1:
        raise RhetoricError(f"sentence_windows: max_tokens must be >= 1, got {max_tokens}")
    if overlap < 0 or overlap >= max_tokens:
        raise RhetoricError(
            f"sentence_windows: overlap must be in [0, max_tokens), got {overlap} with max_tokens {max_tokens}"
        )

    def get_spans(docs: Iterable[Doc]) -> List[List[Span]]:
        return get_sentence_windows(docs, max_tokens, overlap)

    return get_spans
