"""The metadata store of a search index (``sentences.sqlite``): one row per
vector (id = faiss id) with the columns of :class:`Hit`, and one row per
finished build part (its done-marker, committed with its rows in one
transaction, which is what makes the build resumable)."""
import json
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

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


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(str(path))
    con.executescript(_SCHEMA)
    return con


def _add_part(con: sqlite3.Connection, part: int, rows: Sequence[Dict[str, Any]], n_papers: int) -> None:
    """Rows and done-marker of one part, in one transaction (ids follow on)."""
    with con:
        first = con.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
        con.executemany(
            f"INSERT INTO sentences (id, {', '.join(COLUMNS)}, part) VALUES ({', '.join('?' * (len(COLUMNS) + 2))})",
            [(first + i, *[json.dumps(r[c]) if c.endswith("scores") else r[c] for c in COLUMNS], part)
             for i, r in enumerate(rows)],
        )
        con.execute("INSERT INTO parts VALUES (?, ?, ?, ?)", (part, first, len(rows), n_papers))


def _row_hit(row: sqlite3.Row, score: float) -> Hit:
    values = dict(row)
    values.pop("part", None)
    for key in ("scores", "fine_scores"):
        values[key] = json.loads(values[key]) if values[key] else {}
    return Hit(score=float(score), **values)
