"""The sections and segments of the sentences of one batch, shared by the
layers of one forward pass.

A classifier's input is ``(docs, indices)`` (``pooling.py``). Several layers
of a section-aware model (``ml/sections.py``: the section one-hot and the
back-matter rule; ``ml/sequence.py``: the CRF chains and the n-gram position
buckets; the trunk's positions within sections) need the section of every
sentence of the batch. The model's top layer (``force_sections``) turns its
input into a :class:`SentenceBatch`, the same pair that reads the sections
from the docs once per ``acknowledgements`` flag and keeps them for the
layers below (reading the extension values each time was ~40 % of the classifier's
predict time). Given a plain ``(docs, indices)`` tuple the helpers read the
sections each time.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from thinc.types import Ragged

from ..errors import RhetoricError
from ..extensions import HEADING
from ..section_headings import BODY_SECTIONS, sentence_sections, token_values
from .devices import to_host

SEGMENTS = ("docs", "sections")


class SentenceBatch(tuple):
    """``(docs, indices)`` (it unpacks and indexes as that pair) that keeps
    the section names of its sentences once read (``sections_of``)."""

    def __new__(cls, docs: List[Doc], indices: Ragged, sections: Dict[bool, List[str]] = None):
        batch = super().__new__(cls, (docs, indices))
        batch.sections = {} if sections is None else sections
        return batch

    def with_parts(self, parts: Tuple) -> "SentenceBatch":
        """The batch with its docs and indices replaced by ``parts`` (the
        same sentences, e.g. the indices copied to the host), sharing the
        sections read so far."""
        return SentenceBatch(parts[0], parts[1], self.sections)


def as_batch(X: Tuple[List[Doc], Ragged]) -> SentenceBatch:
    """``X`` as a :class:`SentenceBatch` (itself when it is one)."""
    return X if isinstance(X, SentenceBatch) else SentenceBatch(X[0], X[1])


def read_sections(docs: List[Doc], indices: Ragged, acknowledgements: bool) -> List[str]:
    """Section names of every sentence of ``(docs, indices)``, read from the docs."""
    data = to_host(indices.dataXd).tolist()  # one copy per batch, not a device sync per sentence
    lengths = to_host(indices.lengths).tolist()
    out, row = [], 0
    for doc, n in zip(docs, lengths):
        starts = [data[row + i][0] for i in range(n)]
        ends = [data[row + i][1] for i in range(n)] if acknowledgements else None
        out.extend(sentence_sections(doc, starts, ends))
        row += n
    return out


def sections_of(X: Tuple[List[Doc], Ragged], acknowledgements: bool = False) -> List[str]:
    """Section names (``section_headings.sentence_sections``) of every
    sentence of ``X = (docs, indices)``, in order (``acknowledgements``:
    thank-you/funding sentences are back matter). A :class:`SentenceBatch`
    reads them once per flag."""
    docs, indices = X
    kept = getattr(X, "sections", None)
    if kept is None:
        return read_sections(docs, indices, acknowledgements)
    if acknowledgements not in kept:
        kept[acknowledgements] = read_sections(docs, indices, acknowledgements)
    return list(kept[acknowledgements])


def segments_of(X: Tuple[List[Doc], Ragged], segments: str = "docs") -> Tuple[List[int], List[str]]:
    """The sequence lengths (summing to the number of sentence rows) and each
    segment's tag: one segment per doc with sentences (tag "") for
    ``segments="docs"``; one per run of consecutive sentences of the same
    section, tagged with the section's name, for ``"sections"``."""
    if segments not in SEGMENTS:
        raise RhetoricError(f"Unknown segments {segments!r}: use one of {SEGMENTS}")
    lengths = to_host(X[1].lengths).tolist()  # one copy, not one sync per doc
    if segments == "docs":
        return [n for n in lengths if n], ["" for n in lengths if n]
    names = sections_of(X)
    out, tags, row = [], [], 0
    for n in lengths:
        for i in range(n):
            if i == 0 or names[row + i] != names[row + i - 1]:
                out.append(0)
                tags.append(names[row + i])
            out[-1] += 1
        row += n
    return out, tags


def is_paper(sections: Sequence[str]) -> bool:
    """A doc whose sentences have these sections is a full paper: one of them
    is in a body section (introduction ... conclusion), or it has more than
    one section (e.g. an abstract and topical headings the tagger calls
    "unknown"). An abstract or plain text (one section, or none) is not."""
    return any(s in BODY_SECTIONS for s in sections) or len(set(sections)) > 1


def paper_rows(X: Tuple[List[Doc], Ragged], silent_sections: Sequence[str] = ()) -> numpy.ndarray:
    """1.0 for each sentence row of ``X`` in a full paper (``is_paper``) and
    not in ``silent_sections``, else 0.0."""
    sections = sections_of(X)
    silent = set(silent_sections)
    out, row = [], 0
    for n in to_host(X[1].lengths).tolist():
        paper = is_paper(sections[row : row + n])
        out.extend([1.0 if paper and s not in silent else 0.0 for s in sections[row : row + n]])
        row += n
    return numpy.asarray(out, dtype="f")


def sentence_headings(X: Tuple[List[Doc], Ragged]) -> List[Optional[str]]:
    """The heading (``sent._.rhetoric_heading``; None: none) of every
    sentence row of ``X``."""
    docs, indices = X
    offsets = to_host(indices.dataXd).tolist()
    out, row = [], 0
    for doc, n in zip(docs, to_host(indices.lengths).tolist()):
        headings = token_values(doc, HEADING) if n else []
        for i in range(n):
            start = int(offsets[row + i][0])
            out.append(headings[start] if start < len(headings) else None)
        row += n
    return out
