"""CSAbstruct (Cohan et al. 2019): JSON lines, one abstract per line with
``sentences`` and ``labels`` (same length) and ``confs``.

One Doc per abstract, sentences exactly as given, gold labels as sentence
labels. ``abstract_id`` is always 0 in the release, so the doc id is
``"<file stem>:<line>"`` (e.g. ``"dev:17"``).
"""
from pathlib import Path
from typing import Iterator, Optional, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from .common import ReaderError, ReadStats, clean_sentences, doc_from_sentences, jsonl_docs, require

LABELS = ("background", "objective", "method", "result", "other")


def read_csabstruct(
    path: Union[str, Path],
    nlp_or_vocab: Union[Language, Vocab],
    *,
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
) -> Iterator[Doc]:
    """Yield one Doc per abstract of a CSAbstruct ``.jsonl`` file.

    A record without ``sentences``/``labels``, with lists of different
    lengths, an empty sentence or a non-string label is skipped and counted in
    ``stats`` (``errors="skip"``) or raises a ReaderError naming file and line.
    ``limit`` > 0 stops after that many Docs.
    """

    def record_doc(record, path: Path, line: int) -> Doc:
        sentences = clean_sentences(require(record, "sentences", path, line, list), path, line)
        labels = require(record, "labels", path, line, list)
        if len(labels) != len(sentences):
            raise ReaderError(path, line, f"length mismatch: {len(sentences)} sentences "
                              f"but {len(labels)} labels", field="labels")
        if not sentences:
            raise ReaderError(path, line, "no sentences", field="sentences")
        if not all(isinstance(label, str) and label for label in labels):
            raise ReaderError(path, line, "labels must be non-empty strings", field="labels")
        return doc_from_sentences(nlp_or_vocab, sentences, labels=labels, doc_id=f"{path.stem}:{line}")

    return jsonl_docs(path, record_doc, limit=limit, errors=errors, stats=stats)
