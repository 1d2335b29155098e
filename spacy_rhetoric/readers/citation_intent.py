"""Citation-intent corpora in the SciBERT JSON-lines format (one citation
context per line: ``{"text", "label", "metadata"}``): SciCite (Cohan et al.
2019; background, method, result) and ACL-ARC (Jurgens et al. 2018;
Background, Uses, CompareOrContrast, Motivation, Extends, Future).

One Doc per record holding the text as one sentence (whitespace runs,
including SciCite's line breaks, collapsed to single spaces) with the label
as its gold sentence label; doc id ``"<file stem>:<line>"``.
"""
from pathlib import Path
from typing import Iterator, Optional, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from .common import ReaderError, ReadStats, doc_from_sentences, jsonl_docs, require

SCICITE_LABELS = ("background", "method", "result")
ACL_ARC_LABELS = ("Background", "Uses", "CompareOrContrast", "Motivation", "Extends", "Future")


def read_citation_intent(
    path: Union[str, Path],
    nlp_or_vocab: Union[Language, Vocab],
    *,
    text_field: str = "text",
    label_field: str = "label",
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
) -> Iterator[Doc]:
    """Yield one single-sentence Doc per record. A record without text or
    label (or with empty ones) is skipped and counted (``errors="skip"``) or
    raises a ReaderError naming file, line and field."""

    def record_doc(record, path: Path, line: int) -> Doc:
        text = " ".join(require(record, text_field, path, line, str).split())
        label = require(record, label_field, path, line, str).strip()
        if not text:
            raise ReaderError(path, line, "empty text", field=text_field)
        if not label:
            raise ReaderError(path, line, "empty label", field=label_field)
        return doc_from_sentences(nlp_or_vocab, [text], labels=[label], doc_id=f"{path.stem}:{line}")

    return jsonl_docs(path, record_doc, limit=limit, errors=errors, stats=stats)
