"""The metadata store of a search index (``sentences.sqlite``): one row per
vector (id = faiss id) with the columns of :class:`Hit`, and one row per
finished build part (its done-marker, committed with its rows in one
transaction, which is what makes the build resumable).

A store is checked when it is opened (:func:`check_store`: its tables and
columns) and each row when it is read (:func:`_row_hit`: its types, its
scores JSON): a damaged store is a one-line ``SearchIndexError`` ("not a
valid spacy-rhetoric index: ..."), never a Python error from deep inside."""
import json
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from ..io import path_text
from .sources import SearchIndexError

COLUMNS = ("paper", "sent_index", "section", "heading", "sid", "text", "label", "fine_label",
           "gold_label", "phrase_label", "scores", "fine_scores", "input")


FILTERS = {"label": "label", "section": "section", "paper": "paper"}


@dataclass
class Hit:
    """One search result: the sentence, where it is, and what it does."""

    id: int
    score: float
    paper: Optional[str]
    sent_index: int
    section: Optional[str]
    heading: Optional[str]
    sid: Optional[str]
    text: str
    label: Optional[str]
    fine_label: Optional[str] = None
    gold_label: Optional[str] = None
    phrase_label: Optional[str] = None
    scores: Dict[str, float] = field(default_factory=dict)
    fine_scores: Dict[str, float] = field(default_factory=dict)
    input: Optional[str] = None  # the corpus file (relative to the folder given); None in a format-1 index

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sentences (
    id INTEGER PRIMARY KEY, paper TEXT, sent_index INTEGER, section TEXT, heading TEXT, sid TEXT,
    text TEXT NOT NULL, label TEXT, fine_label TEXT, gold_label TEXT, phrase_label TEXT,
    scores TEXT, fine_scores TEXT, input TEXT, part INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS parts (part INTEGER PRIMARY KEY, first_id INTEGER NOT NULL, n INTEGER NOT NULL,
    papers INTEGER NOT NULL);
"""


TABLES = {"sentences": ("id", *COLUMNS, "part"), "parts": ("part", "first_id", "n", "papers")}
INVALID = "not a valid spacy-rhetoric index"


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(str(path))
    con.executescript(_SCHEMA)
    return con


def check_store(con: sqlite3.Connection, path: Path, tables: Sequence[str] = ("sentences",),
                input_column: bool = True) -> None:
    """The ``tables`` of the store at ``path`` have the columns this version
    writes (``input_column=False``: a format-1 store, ``input`` optional);
    a ``SearchIndexError`` naming the first difference otherwise."""
    for table in tables:
        want = tuple(c for c in TABLES[table] if input_column or c != "input")
        try:
            found = tuple(row[1] for row in con.execute(f"PRAGMA table_info({table})"))
        except sqlite3.Error as err:
            raise SearchIndexError(f"{INVALID}: {path_text(path)} is not a spacy-rhetoric metadata store "
                                   f"({err})") from None
        if not found:
            raise SearchIndexError(f"{INVALID}: {path_text(path)} has no table {table!r}")
        missing = [c for c in want if c not in found]
        extra = [c for c in found if c not in want and (input_column or c != "input")]
        if missing or extra:
            what = f"column {missing[0]!r} is missing" if missing else f"it has an unknown column {extra[0]!r}"
            raise SearchIndexError(f"{INVALID}: in table {table} of {path_text(path)}, {what} "
                                   "(edited by hand?); rebuild the index with spacy-rhetoric index")


def fetch_hit(con: sqlite3.Connection, path: Path, id_: int, score: float) -> Optional["Hit"]:
    """The row of ``id_`` as a Hit (None when there is none); a row that
    cannot be read is a ``SearchIndexError``."""
    try:
        row = con.execute("SELECT * FROM sentences WHERE id = ?", (int(id_),)).fetchone()
    except sqlite3.Error as err:  # e.g. text that is not UTF-8
        raise SearchIndexError(f"{INVALID}: row {id_} of {path_text(path)} cannot be read ({err})") from None
    return None if row is None else _row_hit(row, score, path)


def add_part(con: sqlite3.Connection, part: int, rows: Sequence[Dict[str, Any]], n_papers: int) -> None:
    """Rows and done-marker of one part, in one transaction (ids follow on)."""
    with con:
        first = con.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
        con.executemany(
            f"INSERT INTO sentences (id, {', '.join(COLUMNS)}, part) VALUES ({', '.join('?' * (len(COLUMNS) + 2))})",
            [(first + i, *[json.dumps(r[c]) if c.endswith("scores") else r[c] for c in COLUMNS], part)
             for i, r in enumerate(rows)],
        )
        con.execute("INSERT INTO parts VALUES (?, ?, ?, ?)", (part, first, len(rows), n_papers))


_INTEGERS = ("id", "sent_index")


def _row_hit(row: sqlite3.Row, score: float, path: Path = Path("sentences.sqlite")) -> Hit:
    values = dict(row)
    values.pop("part", None)
    where = f"{INVALID}: row {values.get('id')} of {path_text(path)}"
    for key, value in values.items():
        ok = isinstance(value, int) if key in _INTEGERS else value is None or isinstance(value, str)
        if not ok or (key == "text" and value is None):
            raise SearchIndexError(f"{where}: {key} is {type(value).__name__}, not "
                                   f"{'an integer' if key in _INTEGERS else 'text'}")
    for key in ("scores", "fine_scores"):
        try:
            values[key] = json.loads(values[key]) if values[key] else {}
        except ValueError as err:
            raise SearchIndexError(f"{where}: {key} is not JSON ({err})") from None
        if not isinstance(values[key], dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in values[key].values()):
            raise SearchIndexError(f"{where}: {key} is not an object of label -> score")
    return Hit(score=float(score), **values)
