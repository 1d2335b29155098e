"""What determines a label build: its outputs, the labeling settings and the
phrase list (recorded, with the job's own settings, in ``build_config.json``:
``spacy_rhetoric.jobs.settings``, which a resumed build must match)."""
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

from ..jobs.common import CorpusBuildError  # noqa: F401 - label's errors are the jobs' (re-exported)
from ..util import DEFAULT_PARSER

# train/valid .jsonl and .spacy: ``jobs.settings.LABEL_FILES``, never inputs of any job
OUTPUT_NAMES = ("train", "valid")
# Components of the English pipeline the labeler does not need (lemmas come
# from tagger + attribute_ruler + lemmatizer, the root from the parser).
DEFAULT_EXCLUDE = ("ner",)
PhrasePairs = List[Tuple[str, str]]


@dataclass(frozen=True)
class LabelSettings:
    """Everything that determines the labels (recorded in build_config.json)."""

    parser: str = DEFAULT_PARSER
    n: int = 5
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    code: Optional[str] = None  # a Python file to import first (custom functions), like spaCy's --code
    # Phrase segments shorter than n tokens are kept whole when they have at least
    # min_phrase_length tokens; None = n, i.e. only full n-grams (the paper's setting: shorter
    # n-grams "tend to be too generic to convey a specific communicative function").
    min_phrase_length: Optional[int] = None


def read_phrase_list(phrases: Union[str, Path, Sequence[Tuple[str, str]]]) -> Tuple[PhrasePairs, int]:
    """``(label, phrase)`` pairs and the number of skipped lines."""
    if isinstance(phrases, (str, Path)):
        from ..readers.phrases import read_phrases

        pairs, n_skipped = read_phrases(phrases)
        return [(str(a), str(b)) for a, b in pairs], int(n_skipped)
    return [(str(a), str(b)) for a, b in phrases], 0


def phrases_digest(pairs: PhrasePairs) -> str:
    h = hashlib.sha1()
    for label, phrase in pairs:
        h.update(f"{label}\t{phrase}\n".encode("utf8"))
    return h.hexdigest()
