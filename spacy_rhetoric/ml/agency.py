"""Whose work a sentence speaks of: cues that tell the authors' own work
from other people's, for a fitted member's features
(``spacy_rhetoric.AgencyCues.v1``, the ``[...members.tfidf.cues]`` block).

Why. In a full paper, a sentence that describes a method is the authors'
own work or someone else's, and the words of the method are the same
("the parser builds a chart ..."). What tells them apart is who is
speaking: a citation, *we* / *our*, *they* / *their*, "in this paper" -- in
the sentence and in the sentences around it (a paragraph about another
paper cites it once and then says "their system ..."). A bag of n-grams
sees the words but not how many of them there are nearby; these columns
count them.

Per sentence (:data:`CUES`): citations (``readers.fulltext.CITATION``:
"(Smith, 1990)", "Smith et al. (1990)", "[3, 5-7]", and the bare author-year
form "Smith and Jones 1990" of tokenised corpora), first-person words,
third-person words, a self-reference ("this paper", "here we"), and the two
crossings (cites without *we*, *we* without a citation). Per row: those of
the sentence, of the previous and of the next sentence of the same doc, and
their mean over the ``window`` sentences on each side -- ``4 * len(CUES)``
columns, times ``weight``. Plain regular expressions over the text: what a
citation looks like is the one thing no library here tells, and the text is
all a plain ``nlp(text)`` call gives.
"""
import re
from dataclasses import asdict, dataclass
from typing import Dict, List, Sequence

import numpy
from spacy.util import registry

from ..errors import RhetoricError
from ..readers.fulltext import CITATION, YEAR

# "Kaufman and Rousseeuw 1990 define ...": an in-text citation of a tokenised corpus (AZ-CL), without brackets;
# the name has three letters or more and is not a word that starts a time phrase ("Since 1990")
BARE_CITATION = re.compile(
    rf"\b(?!(?:Since|During|Until|Before|After|From|Between|Around|Through)\b)[A-Z][a-z][\w'’\-]+"
    rf"(?: et al\.?| and [A-Z][\w'’\-]+)? {YEAR}\b")
FIRST_PERSON = re.compile(r"\b(?:we|our|ours|us|I|my)\b", re.IGNORECASE)
THIRD_PERSON = re.compile(r"\b(?:they|their|them|theirs|he|she|his|her)\b", re.IGNORECASE)
SELF_REFERENCE = re.compile(r"\b(?:this (?:paper|article|work|study)|the present (?:paper|work|study)|here,? we|"
                            r"in this section)\b", re.IGNORECASE)
CUES = ("citations", "cites", "first_person", "says_we", "third_person", "self_reference", "cites_not_we",
        "we_not_cites")


def citation_count(text: str) -> int:
    """Citations in ``text``: bracketed or author-year ones (``CITATION``) and bare author-year ones."""
    return len(CITATION.findall(text)) + len(BARE_CITATION.findall(CITATION.sub(" ", text)))


def sentence_cues(text: str) -> List[float]:
    """The :data:`CUES` of one sentence, each in [0, 1]."""
    cites, we = citation_count(text), len(FIRST_PERSON.findall(text))
    they = len(THIRD_PERSON.findall(text))
    return [min(cites, 3) / 3, float(cites > 0), min(we, 3) / 3, float(we > 0), min(they, 2) / 2,
            float(bool(SELF_REFERENCE.search(text))), float(cites > 0 and not we), float(we > 0 and not cites)]


@dataclass(frozen=True)
class AgencyCues:
    """The cue columns of every sentence row (module docstring)."""

    window: int = 3
    weight: float = 1.0

    @property
    def width(self) -> int:
        return 4 * len(CUES)

    def settings(self) -> Dict[str, float]:
        return asdict(self)

    def matrix(self, texts: Sequence[str], lengths: Sequence[int]) -> numpy.ndarray:
        """``[len(texts), width]`` for rows that are the sentences of docs of
        ``lengths`` sentences in a row."""
        cues = numpy.asarray([sentence_cues(t) for t in texts], dtype="float32").reshape(len(texts), len(CUES))
        out = numpy.zeros((len(texts), self.width), dtype="float32")
        k, row = len(CUES), 0
        for n in lengths:
            block = cues[row : row + n]
            out[row : row + n, :k] = block
            out[row + 1 : row + n, k : 2 * k] = block[:-1]
            out[row : row + n - 1, 2 * k : 3 * k] = block[1:]
            # the window's mean from running sums, cut at the doc's edges
            sums = numpy.vstack([numpy.zeros((1, k), dtype="float32"), numpy.cumsum(block, axis=0)])
            i = numpy.arange(n)
            lo, hi = numpy.maximum(0, i - self.window), numpy.minimum(n, i + self.window + 1)
            out[row : row + n, 3 * k :] = (sums[hi] - sums[lo]) / (hi - lo)[:, None]
            row += n
        return out * self.weight


@registry.misc("spacy_rhetoric.AgencyCues.v1")
def build_agency_cues(window: int = 3, weight: float = 1.0) -> AgencyCues:
    """Whose work each sentence speaks of (``ml/agency.py``): citation and
    person cues of the sentence, its neighbours and the ``window`` sentences
    on each side, ``weight`` times, as columns of a fitted member's
    features."""
    if window < 0 or weight <= 0:
        raise RhetoricError(f"AgencyCues.v1: window >= 0 and weight > 0, got window = {window}, weight = {weight}")
    return AgencyCues(int(window), float(weight))
