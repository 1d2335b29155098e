"""The input formats of ``spacy-rhetoric label``: papers as sentence lists.

One input file is read into a :class:`ReadResult`: its sentences in source
order, each a dict ``paper_id, section, sid, index, text`` (whitespace
collapsed). Formats, by suffix:

* ``.xml``: a CL-SciSumm reference paper (``readers.clscisumm``);
* ``.txt``: one sentence per non-empty line, paper id = file stem;
* ``.jsonl``: one sentence per line, ``text`` (or ``sentence``) plus optional
  ``paper_id`` (or ``doc_id``/``id``; default the file stem), ``section``,
  ``sid``. Malformed lines are skipped and counted with ``file:line``
  (``readers.common.iter_jsonl``);
* ``.spacy``: a DocBin, one paper per Doc (doc id or ``<stem>:<i>``),
  sentences from the Doc's boundaries (no boundaries: the Doc is one
  sentence), sections and sids from its extension values.

:func:`read_input` never raises for a malformed input: it comes back skipped,
with a reason naming the file.
"""
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from ..io import path_text
from .common import ReaderError, ReadStats, iter_jsonl

SUFFIXES = (".xml", ".txt", ".jsonl", ".spacy")
# A "sentence" longer than this is no sentence (a file without line breaks, a table
# dump): it is skipped and counted, never given to the parser (whose cost grows with it).
MAX_SENTENCE_CHARS = 10_000


@dataclass
class ReadResult:
    """The sentences of one input, or why it was skipped."""

    sentences: List[Dict[str, Any]] = field(default_factory=list)  # paper_id, section, sid, index, text
    skipped_reason: Optional[str] = None
    n_bad_records: int = 0  # malformed lines inside an otherwise readable input
    n_empty: int = 0  # empty sentences the format reader already left out
    bad_records: List[str] = field(default_factory=list)  # first few reasons


def input_kind(path: Path) -> Optional[str]:
    """The format of ``path`` by its suffix ("xml", "txt", "jsonl", "spacy"), or None."""
    suffix = Path(path).suffix.lower()
    return suffix[1:] if suffix in SUFFIXES else None


def clean_text(text: str) -> str:
    """Collapse runs of whitespace (XML line breaks, tabs) to single spaces."""
    return " ".join(str(text).split())


def _sent(paper_id, section, sid, index, text) -> Dict[str, Any]:
    return {
        "paper_id": str(paper_id),
        "section": None if section is None else str(section),
        "sid": None if sid is None else str(sid),
        "index": int(index),
        "text": clean_text(text),
    }


def read_xml(path: Path) -> ReadResult:
    from .clscisumm import read_reference_xml

    paper = read_reference_xml(path)
    return ReadResult(
        sentences=[
            _sent(paper.paper_id, s.section, s.sid, i, s.text) for i, s in enumerate(paper.sentences)
        ],
        n_empty=int(getattr(paper, "n_empty", 0) or 0),
    )


def read_txt(path: Path) -> ReadResult:
    from .text import read_text_file

    lines = read_text_file(path).splitlines()
    texts = [line for line in lines if line.strip()]
    return ReadResult(sentences=[_sent(path_text(path.stem), None, None, i, t) for i, t in enumerate(texts)])


def read_jsonl(path: Path) -> ReadResult:
    stats = ReadStats(name=path_text(path))
    sentences = []
    counters: Counter = Counter()
    for line, obj in iter_jsonl(path, errors="skip", stats=stats):
        text = obj.get("text", obj.get("sentence"))
        if not isinstance(text, str):
            stats.skip(ReaderError(path, line, "no string field 'text' or 'sentence'"))
            continue
        stats.used += 1
        paper_id = str(obj.get("paper_id", obj.get("doc_id", obj.get("id", path_text(path.stem)))))
        sentences.append(_sent(paper_id, obj.get("section"), obj.get("sid"), counters[paper_id], text))
        counters[paper_id] += 1
    return ReadResult(sentences=sentences, n_bad_records=stats.skipped, bad_records=stats.examples)


def read_spacy(path: Path) -> ReadResult:
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    from .. import extensions as ext

    ext.install_extensions()
    result = ReadResult()
    docbin = DocBin(store_user_data=True).from_disk(path)
    for i, doc in enumerate(ext.docbin_docs(docbin, Vocab())):
        paper_id = ext.get_doc_value(doc, ext.DOC_ID) or f"{path_text(path.stem)}:{i}"
        if doc.has_annotation("SENT_START"):
            sents = list(doc.sents)
            sections = ext.get_sent_labels(doc, field=ext.SECTION)
            sids = ext.get_sent_labels(doc, field=ext.SID)
        else:  # no boundaries: the whole Doc is one sentence
            sents, sections, sids = [doc[:]], [None], [None]
        for j, (sent, section, sid) in enumerate(zip(sents, sections, sids)):
            result.sentences.append(_sent(paper_id, section, sid, j, sent.text))
    return result


# kind -> reader(path) -> ReadResult; a reader raises on an unreadable input.
READERS: Dict[str, Callable[[Path], ReadResult]] = {
    "xml": read_xml,
    "txt": read_txt,
    "jsonl": read_jsonl,
    "spacy": read_spacy,
}


def read_input(path: Path, kind: Optional[str] = None) -> ReadResult:
    """Read one input; an unreadable input comes back skipped with its reason
    (file and error), never as an exception."""
    path = Path(path)
    kind = kind or input_kind(path)
    if kind not in READERS:
        return ReadResult(skipped_reason=f"{path_text(path)}: unsupported input type (expected one of {', '.join(SUFFIXES)})")
    try:
        result = READERS[kind](path)
    except ImportError:
        raise
    except Exception as err:  # malformed input: skip and count
        reason = f"{type(err).__name__}: {err}"
        if path_text(path) not in reason:
            reason = f"{path_text(path)}: {reason}"
        return ReadResult(skipped_reason=reason)
    too_long = [s for s in result.sentences if len(s["text"]) > MAX_SENTENCE_CHARS]
    if too_long:
        result.sentences = [s for s in result.sentences if len(s["text"]) <= MAX_SENTENCE_CHARS]
        result.n_bad_records += len(too_long)
        result.bad_records.extend(
            f"{path}: sentence {s['index']} of paper {s['paper_id']} has {len(s['text']):,} characters "
            f"(over {MAX_SENTENCE_CHARS:,}: not a sentence), skipped" for s in too_long[:3])
    if not result.sentences and result.skipped_reason is None:
        result.skipped_reason = f"{path}: no sentences" + (
            f" (its {len(too_long)} lines are over {MAX_SENTENCE_CHARS:,} characters)" if too_long else "")
    return result
