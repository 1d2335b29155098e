"""Shared helpers of the corpus readers.

* :func:`doc_from_sentences` builds one ``Doc`` whose sentence boundaries are
  exactly the given sentences, with gold labels, sections, source sentence ids
  and a doc id written through :mod:`spacy_rhetoric.extensions`.
* :func:`iter_jsonl` iterates over a JSON-lines file and reports ``file:line``
  for invalid JSON; :func:`require` checks a record's fields the same way.
* :func:`labelled_sentence_docs` turns Docs into one Doc per labelled
  sentence (the sentence-level unit of training and evaluation);
  :func:`sentence_splitters` names the components to skip on Docs whose
  boundaries are preset; :func:`split_cjk` cuts Chinese and Japanese text
  after its own full stops (``。！？``).
* :class:`ReadStats` counts records read, records/docs written and records
  skipped (with reasons) and prints a one-line summary, so that
  ``records read == records used + records skipped`` always holds and nothing
  is lost silently.

Every reader takes ``errors="skip"`` (skip a malformed record, count it and
warn once in the summary) or ``errors="raise"`` (stop with a
:class:`ReaderError` naming file, line and field).
"""
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import srsly
from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import get_lang_class
from spacy.vocab import Vocab
from wasabi import msg

from .. import extensions
from ..errors import RhetoricError
from ..io import path_text

ERROR_MODES = ("skip", "raise")


class ReaderError(RhetoricError):
    """A malformed input record, located by file, line and (optionally) field."""

    def __init__(self, path: Union[str, Path], line: Optional[int], message: str,
                 field: Optional[str] = None):
        self.path = Path(path)
        self.line = line
        self.field = field
        self.reason = message
        where = f"{path_text(path)}:{line}" if line is not None else path_text(path)
        what = f" (field {field!r})" if field else ""
        super().__init__(f"{where}: {message}{what}")


@dataclass
class ReadStats:
    """Bookkeeping of one read: records in = records used + records skipped."""

    name: str = "records"
    read: int = 0  # input records seen (lines, XML files, ...)
    used: int = 0  # input records that went into the output
    skipped: int = 0
    docs: int = 0  # output Docs produced
    sentences: int = 0  # sentences in the produced Docs
    reasons: Counter = field(default_factory=Counter)
    examples: List[str] = field(default_factory=list)  # first few skip messages
    notes: Counter = field(default_factory=Counter)  # things dropped inside used records

    def skip(self, err: Union[ReaderError, str]) -> None:
        self.skipped += 1
        if isinstance(err, ReaderError):
            key = err.reason.split(":")[0] + (f" ({err.field})" if err.field else "")
        else:
            key = str(err).split(":")[0]
        self.reasons[key] += 1
        if len(self.examples) < 5:
            self.examples.append(str(err))

    def check(self) -> None:
        if self.read != self.used + self.skipped:
            raise AssertionError(
                f"{self.name}: {self.read} read but {self.used} used + {self.skipped} skipped"
            )

    def summary(self) -> str:
        text = (
            f"{self.name}: {self.read} records read, {self.used} used, "
            f"{self.skipped} skipped; {self.docs} docs, {self.sentences} sentences"
        )
        if self.reasons:
            text += " (skipped: " + ", ".join(f"{r} x{n}" for r, n in self.reasons.most_common()) + ")"
        if self.notes:
            text += " (" + ", ".join(f"{r} x{n}" for r, n in self.notes.most_common()) + ")"
        return text

    def print_summary(self) -> None:
        if self.skipped:
            msg.warn(self.summary())
            for example in self.examples:
                msg.text(f"  e.g. {example}")
        else:
            msg.info(self.summary())

    def merge(self, other: "ReadStats") -> None:
        self.read += other.read
        self.used += other.used
        self.skipped += other.skipped
        self.docs += other.docs
        self.sentences += other.sentences
        self.reasons.update(other.reasons)
        self.notes.update(other.notes)
        self.examples.extend(other.examples[: max(0, 5 - len(self.examples))])


def suffix_files(path: Union[str, Path], suffix: str) -> List[Path]:
    """The files of a corpus path: the file itself, or every file below the
    folder whose name ends with ``suffix`` (case-insensitive), sorted by
    relative path (the file readers of full-paper corpora: CoreSC, AZ)."""
    path = Path(path)
    if path.is_dir():
        return sorted((p for p in path.rglob("*") if p.name.lower().endswith(suffix.lower()) and p.is_file()),
                      key=lambda p: p.relative_to(path).as_posix())
    if not path.exists():
        raise FileNotFoundError(f"No such file or folder: {path}")
    return [path]


def check_errors_mode(errors: str) -> None:
    if errors not in ERROR_MODES:
        raise RhetoricError(f"errors must be one of {ERROR_MODES}, got {errors!r}")


def handle(err: ReaderError, errors: str, stats: Optional[ReadStats]) -> None:
    """Raise ``err`` (errors="raise") or count it as a skipped record."""
    if errors == "raise":
        raise err
    if stats is not None:
        stats.skip(err)


def iter_jsonl(path: Union[str, Path], *, errors: str = "raise",
               stats: Optional[ReadStats] = None) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSON-lines
    file (1-based line numbers). A line that is not a JSON object raises a
    :class:`ReaderError` naming the file and line, or is skipped and counted
    (``errors="skip"``). Every yielded or skipped line is counted in
    ``stats.read``; the caller counts ``stats.used``."""
    check_errors_mode(errors)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No such file: {path}")
    with path.open("rb") as fileh:
        for i, raw in enumerate(fileh, start=1):
            if i == 1 and raw.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte-order mark
                raw = raw[3:]
            if not raw.strip():
                continue
            if stats is not None:
                stats.read += 1
            try:
                line = raw.decode("utf8")
            except UnicodeDecodeError as exc:
                handle(ReaderError(path, i, f"invalid UTF-8: {exc}"), errors, stats)
                continue
            try:
                record = srsly.json_loads(line)
            except ValueError as exc:
                handle(ReaderError(path, i, f"invalid JSON: {exc}"), errors, stats)
                continue
            if not isinstance(record, dict):
                handle(ReaderError(path, i, f"expected a JSON object, got {type(record).__name__}"),
                       errors, stats)
                continue
            yield i, record


def jsonl_docs(path: Union[str, Path], record_doc: Callable[[Dict[str, Any], Path, int], Optional[Doc]], *,
               limit: int = 0, errors: str = "skip", stats: Optional[ReadStats] = None) -> Iterator[Doc]:
    """One Doc per record of a JSON-lines corpus file: ``record_doc(record,
    path, line)`` gives it, or None for a record left out on purpose
    (counted as used), or raises a :class:`ReaderError` (the record is
    skipped and counted, ``errors="skip"``, or the error raised). ``limit`` >
    0 stops after that many Docs. Counts lines, records, Docs and sentences
    in ``stats``."""
    check_errors_mode(errors)
    path = Path(path)
    stats = stats if stats is not None else ReadStats(name=str(path))
    for line, record in iter_jsonl(path, errors=errors, stats=stats):
        try:
            doc = record_doc(record, path, line)
        except ReaderError as err:
            handle(err, errors, stats)
            continue
        stats.used += 1
        if doc is None:
            continue
        stats.docs += 1
        stats.sentences += sum(1 for _ in doc.sents)
        yield doc
        if limit > 0 and stats.docs >= limit:
            return


def shuffle_and_limit(items: Iterable[Any], *, shuffle: bool, limit: int) -> Iterator[Any]:
    """A corpus reader's items in a random order when ``shuffle``
    (``random.shuffle``, which ``spacy train`` seeds), at most ``limit`` of
    them (0: all); unshuffled, no item past the limit is drawn."""
    if shuffle:
        items = list(items)
        random.shuffle(items)
    for i, item in enumerate(items):
        if limit > 0 and i >= limit:
            return
        yield item


def spacy_files(path: Union[str, Path], *, recursive: bool = True, what: str = "") -> List[Path]:
    """The ``.spacy`` files of a corpus path: the file itself, or those in the
    folder (sorted; ``recursive``: below it). FileNotFoundError (prefixed with
    ``what``) when there are none."""
    path = Path(path)
    prefix = f"{what}: " if what else ""
    if path.is_dir():
        files = sorted(path.rglob("*.spacy") if recursive else path.glob("*.spacy"))
        if not files:
            raise FileNotFoundError(f"{prefix}no .spacy files {'under' if recursive else 'in'} {path}")
        return files
    if not path.exists():
        raise FileNotFoundError(f"{prefix}no such file: {path}")
    return [path]


def require(record: Dict[str, Any], key: str, path: Union[str, Path], line: int,
            kind: Union[type, Tuple[type, ...]] = str) -> Any:
    """``record[key]``, checked to be of type ``kind``; a :class:`ReaderError`
    naming file, line and field otherwise."""
    if key not in record:
        raise ReaderError(path, line, "missing field", field=key)
    value = record[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ReaderError(path, line, f"wrong type: expected {names}, got {type(value).__name__}",
                          field=key)
    return value


def clean_sentences(sentences: Sequence[Any], path: Union[str, Path], line: int,
                    key: str = "sentences") -> List[str]:
    """Strip sentences; a non-string or empty sentence is a ReaderError."""
    out = []
    for j, sent in enumerate(sentences):
        if not isinstance(sent, str):
            raise ReaderError(path, line, f"sentence {j} is not a string", field=key)
        sent = sent.strip()
        if not sent:
            raise ReaderError(path, line, f"empty sentence {j}", field=key)
        out.append(sent)
    return out


_BLANK_CACHE: Dict[int, Language] = {}


def _make_doc_fn(nlp_or_vocab: Union[Language, Vocab]):
    from ..long_docs import make_doc

    if isinstance(nlp_or_vocab, Language):
        return partial(make_doc, nlp_or_vocab), nlp_or_vocab.vocab
    if isinstance(nlp_or_vocab, Vocab):
        vocab = nlp_or_vocab
        key = id(vocab)
        if key not in _BLANK_CACHE:
            lang = vocab.lang or "xx"
            _BLANK_CACHE[key] = get_lang_class(lang)(vocab=vocab)
        return partial(make_doc, _BLANK_CACHE[key]), vocab
    raise TypeError(f"expected a Language or Vocab, got {type(nlp_or_vocab).__name__}")


def doc_from_sentences(
    nlp_or_vocab: Union[Language, Vocab],
    sentences: Sequence[str],
    *,
    labels: Optional[Sequence[Optional[str]]] = None,
    sections: Optional[Sequence[Optional[str]]] = None,
    sids: Optional[Sequence[Optional[Any]]] = None,
    doc_id: Optional[str] = None,
) -> Doc:
    """One Doc whose sentence boundaries are exactly ``sentences``.

    Sentences are stripped, tokenized one by one (``nlp.make_doc``, or the
    tokenizer of ``Vocab.lang`` when a Vocab is given) and joined by a single
    space. Gold ``labels``, ``sections`` and source sentence ids ``sids`` (one
    per sentence, None for none) and ``doc_id`` are stored through
    :mod:`spacy_rhetoric.extensions`, so they survive ``DocBin(store_user_data=True)``.
    """
    make_doc, vocab = _make_doc_fn(nlp_or_vocab)
    sentences = list(sentences)
    n = len(sentences)
    for name, values in (("labels", labels), ("sections", sections), ("sids", sids)):
        if values is not None and len(values) != n:
            raise ValueError(f"doc_from_sentences: {n} sentences but {len(values)} {name}")
    words: List[str] = []
    spaces: List[bool] = []
    sent_starts: List[bool] = []
    for j, sent in enumerate(sentences):
        if not isinstance(sent, str):
            raise TypeError(f"doc_from_sentences: sentence {j} is {type(sent).__name__}, not str")
        sent_doc = make_doc(sent.strip())
        if not len(sent_doc):
            raise RhetoricError(f"doc_from_sentences: sentence {j} is empty")
        for k, token in enumerate(sent_doc):
            words.append(token.text)
            spaces.append(bool(token.whitespace_))
            sent_starts.append(k == 0)
        spaces[-1] = j < n - 1
    doc = Doc(vocab, words=words, spaces=spaces, sent_starts=sent_starts if words else None)
    if n:
        if labels is not None:
            extensions.set_sent_labels(doc, labels)
        if sections is not None:
            extensions.set_sent_sections(doc, sections)
        if sids is not None:
            extensions.set_span_values(
                doc, extensions.SID, list(doc.sents), [None if s is None else str(s) for s in sids]
            )
    if doc_id is not None:
        extensions.set_doc_value(doc, extensions.DOC_ID, str(doc_id))
    return doc


def labelled_sentence_docs(docs: Iterable[Doc], label_field: str = extensions.LABEL) -> Iterator[Doc]:
    """One Doc per sentence of ``docs`` that has a value for ``label_field``:
    the sentence's tokens as their own one-sentence Doc (same vocab and
    tokenization, no trailing whitespace, so its text is the sentence's text),
    carrying the label under ``label_field`` plus the sentence's section and
    sid and the source doc id. The unit of ``spacy_rhetoric.SentenceCorpus.v1``
    and of ``spacy-rhetoric evaluate --unit sentence`` (isolated-sentence
    encoders; corpora whose sentence order carries no context)."""
    for doc in docs:
        doc_id = extensions.get_doc_value(doc, extensions.DOC_ID)
        spans = extensions.labelled_spans(doc, field=label_field)
        if not spans:
            continue
        # Read the tokens once per source doc (Token objects are slow to create).
        words = [token.text for token in doc]
        spaces = [bool(token.whitespace_) for token in doc]
        for start, end, label in spans:
            if end <= start:
                continue
            sent_spaces = spaces[start:end]
            sent_spaces[-1] = False
            ref = Doc(doc.vocab, words=words[start:end], spaces=sent_spaces,
                      sent_starts=[True] + [False] * (end - start - 1))
            sent = ref[:]
            source = doc[start:end]
            extensions.set_span_values(ref, label_field, [sent], [label])
            for field_name in (extensions.SECTION, extensions.SID):
                if field_name != label_field:
                    value = extensions.get_span_value(source, field_name)
                    if value is not None:
                        extensions.set_span_values(ref, field_name, [sent], [value])
            if doc_id is not None:
                extensions.set_doc_value(ref, extensions.DOC_ID, doc_id)
            yield ref


# Factories that set sentence boundaries: skipped when a Doc's boundaries are
# preset (readers, ``doc_from_sentences``); a parser respects preset boundaries.
SENTENCE_SPLITTERS = ("sentencizer", "senter")


def sentence_splitters(nlp: Language) -> List[str]:
    """Names of ``nlp``'s components made by a sentence-splitting factory, to
    disable (``nlp.select_pipes``) on Docs whose sentence boundaries are preset."""
    return [name for name in nlp.pipe_names if nlp.get_pipe_meta(name).factory in SENTENCE_SPLITTERS]


# CJK sentence ends (ideographic full stop, full-width ! and ?, halfwidth 。), with the closing
# quotes and brackets that follow them.
_CJK_CLOSE = "[\u300d\u300f\u201d\u2019\uff09\u300b\u3009\u3011\"')]"
_CJK_END = re.compile(f"[\u3002\uff01\uff1f\uff61]+{_CJK_CLOSE}*")
_CJK_CLOSING = re.compile(f"{_CJK_CLOSE}+")

_CJK_OPEN = re.compile(r"[\u300c\u300e\u201c\u2018\uff08\u300a\u3008\u3010\"'(]+")


def split_cjk(doc: Doc) -> Tuple[Doc, List[int]]:
    """``doc`` with every CJK sentence end (:data:`_CJK_END`) a token of its
    own (same text), and the tokens that start a sentence after one; ``doc``
    itself and no starts when its text has none. A tokenizer that splits on
    spaces leaves "新方法。结果很好" in one token; the sentences of such text
    are its full stops'."""
    if not _CJK_END.search(doc.text):
        return doc, []
    words: List[str] = []
    spaces: List[bool] = []
    ends: List[bool] = []
    for token in doc:
        pieces: List[Tuple[str, bool]] = []
        pos = 0
        for match in _CJK_END.finditer(token.text):
            if match.start() > pos:
                pieces.append((token.text[pos:match.start()], False))
            pieces.append((match.group(), True))
            pos = match.end()
        if pos < len(token.text) or not pieces:
            pieces.append((token.text[pos:], False))
        for k, (piece, end) in enumerate(pieces):
            words.append(piece)
            spaces.append(bool(token.whitespace_) if k == len(pieces) - 1 else False)
            ends.append(end)
    for i in range(len(words) - 2, -1, -1):  # an opening quote or bracket stays with what it opens
        if _CJK_OPEN.fullmatch(words[i]) and not spaces[i] and not ends[i + 1]:
            words[i:i + 2] = [words[i] + words[i + 1]]
            spaces[i:i + 2] = [spaces[i + 1]]
            ends[i:i + 2] = [False]
    starts = []
    after_end = False
    for i, word in enumerate(words):
        if after_end and not word.isspace() and not _CJK_CLOSING.fullmatch(word):
            starts.append(i)
            after_end = False
        if ends[i]:
            after_end = True
    if len(words) == len(doc) and not starts:
        return doc, []
    return Doc(doc.vocab, words=words, spaces=spaces), starts
