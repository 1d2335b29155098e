"""Labelled phrase lists for the phrase-n-gram labeler.

Two formats are read:

* **TSV** (the Iwatsuki & Aizawa 2021 formulaic-expression database, e.g.
  ``CL.introduction``): one record per line, ``label<TAB>phrase<TAB>count`` or
  ``label<TAB>phrase`` (no count). No header; a first line that reads
  ``label<TAB>phrase[<TAB>count]`` is taken as a header and ignored. Blank
  lines are not records.
* **CFS3 n-gram dictionary** (``5gram_dict.json``, Alab-NII/CFS3). The file
  itself was not available to us, so this reader accepts the shapes such a
  dump can plausibly have and rejects anything else with a clear error:

  - ``{"plays a vital role in": "01", ...}`` -- n-gram -> label id. N-grams
    are space-joined strings, a JSON list of tokens, or a Python tuple repr
    such as ``"('plays', 'a', 'vital', 'role', 'in')"``; label ids may be
    strings or integers (integers are written as two-digit ids, ``1`` ->
    ``"01"``, the CFS3 README's spelling).
  - ``{"plays a vital role in": ["01", "04"]}`` -- n-gram -> several labels
    (one pair per label; the labeler then drops such n-grams as ambiguous).
  - ``{"01": ["plays a vital role in", ...], ...}`` -- label id -> n-grams
    (recognised when every key is a label id made of digits and every value
    is a list).

A path may be a single file or a directory; a directory is read file by file
in name order (hidden files and ``README*`` are ignored, ``*.json`` files are
read as CFS3 dictionaries, everything else as TSV).

Malformed records never pass silently: with ``strict=True`` the first one
raises a ``ValueError`` naming ``file:line``; by default they are skipped,
counted and summarised in one warning (records in = records out + skipped).
"""
import ast
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, List, Optional, Tuple, Union

from ..errors import RhetoricError

logger = logging.getLogger(__name__)

PhrasePair = Tuple[str, str]


@dataclass
class PhraseRecord:
    label: str
    phrase: str
    count: Optional[int]
    path: Path
    line: int  # 1-based line for TSV, 1-based entry index for JSON


class PhraseFormatError(RhetoricError):
    """A malformed record in a phrase file (message names file and line)."""


def read_phrases(
    path: Union[str, Path], *, strict: bool = False
) -> Tuple[List[PhrasePair], int]:
    """Read ``(label, phrase)`` pairs from a file or a directory of files.

    Returns ``(pairs, n_skipped)``. See the module docstring for formats.
    """
    records, skipped = read_phrase_records(path, strict=strict)
    return [(r.label, r.phrase) for r in records], skipped


def read_phrase_records(
    path: Union[str, Path], *, strict: bool = False
) -> Tuple[List[PhraseRecord], int]:
    """Like ``read_phrases`` but keeps counts and the source file/line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"Phrase list not found: {path}")
    files = _phrase_files(path)
    if not files:
        raise RhetoricError(f"No phrase files in directory {path}")
    records: List[PhraseRecord] = []
    problems: List[str] = []
    for file in files:
        if file.suffix.lower() == ".json":
            recs, probs = _read_json(file, strict=strict)
        else:
            recs, probs = _read_tsv(file, strict=strict)
        records.extend(recs)
        problems.extend(probs)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        logger.warning(
            "read_phrases(%s): %d records read, %d malformed records skipped: %s%s",
            path, len(records), len(problems), shown, more,
        )
    return records, len(problems)


def _phrase_files(path: Path) -> List[Path]:
    if path.is_file():
        return [path]
    return sorted(
        p
        for p in path.iterdir()
        if p.is_file() and not p.name.startswith(".") and not p.name.upper().startswith("README")
    )


def _problem(strict: bool, problems: List[str], where: str, what: str) -> None:
    message = f"{where}: {what}"
    if strict:
        raise PhraseFormatError(message)
    problems.append(message)


def _read_tsv(path: Path, *, strict: bool) -> Tuple[List[PhraseRecord], List[str]]:
    records: List[PhraseRecord] = []
    problems: List[str] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf8")
            except UnicodeDecodeError as err:
                _problem(strict, problems, where, f"not valid UTF-8 ({err.reason})")
                continue
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if lineno == 1 and [f.strip().lower() for f in fields] in (
                ["label", "phrase"],
                ["label", "phrase", "count"],
            ):
                continue
            if len(fields) not in (2, 3):
                _problem(
                    strict, problems, where,
                    f"expected 'label<TAB>phrase[<TAB>count]', got {len(fields)} tab-separated field(s): {line[:80]!r}",
                )
                continue
            label, phrase = fields[0].strip(), " ".join(fields[1].split())
            if not label:
                _problem(strict, problems, where, "empty label")
                continue
            if not phrase:
                _problem(strict, problems, where, "empty phrase")
                continue
            count: Optional[int] = None
            if len(fields) == 3:
                try:
                    count = int(fields[2].strip())
                except ValueError:
                    count = -1
                if count < 0:
                    _problem(
                        strict, problems, where,
                        f"count must be a non-negative integer, got {fields[2]!r}",
                    )
                    continue
            records.append(PhraseRecord(label, phrase, count, path, lineno))
    return records, problems


def _label_id(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"{value:02d}"
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _ngram_text(key: Any) -> Optional[str]:
    if isinstance(key, list):
        if key and all(isinstance(t, str) and t.strip() for t in key):
            return " ".join(t.strip() for t in key)
        return None
    if not isinstance(key, str):
        return None
    text = key.strip()
    if text.startswith("(") and text.endswith(")"):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, tuple):
            return _ngram_text(list(value))
    text = " ".join(text.split())
    return text or None


def _read_json(path: Path, *, strict: bool) -> Tuple[List[PhraseRecord], List[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf8"))
    except UnicodeDecodeError as err:
        raise PhraseFormatError(f"{path}: not valid UTF-8 ({err.reason})") from None
    except json.JSONDecodeError as err:
        raise PhraseFormatError(f"{path}:{err.lineno}: invalid JSON ({err.msg})") from None
    if not isinstance(data, dict):
        raise PhraseFormatError(
            f"{path}: expected a JSON object (n-gram -> label, or label -> [n-grams]), "
            f"got {type(data).__name__}"
        )
    records: List[PhraseRecord] = []
    problems: List[str] = []
    by_label = bool(data) and all(
        isinstance(k, str) and k.strip().isdigit() and isinstance(v, list) for k, v in data.items()
    )
    for index, (key, value) in enumerate(data.items(), start=1):
        where = f"{path}:entry {index} ({str(key)[:40]!r})"
        if by_label:
            label = _label_id(key)
            for item in value:
                ngram = _ngram_text(item)
                if ngram is None:
                    _problem(strict, problems, where, f"not an n-gram: {item!r}")
                    continue
                records.append(PhraseRecord(label, ngram, None, path, index))
            continue
        ngram = _ngram_text(key)
        if ngram is None:
            _problem(strict, problems, where, "empty n-gram")
            continue
        labels: Iterable[Any] = value if isinstance(value, list) else [value]
        labels = [_label_id(v) for v in labels]
        if not labels or any(label is None for label in labels):
            _problem(strict, problems, where, f"label must be a string or integer id, got {value!r}")
            continue
        for label in labels:
            records.append(PhraseRecord(label, ngram, None, path, index))
    return records, problems
