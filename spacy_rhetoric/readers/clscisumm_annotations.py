"""CL-SciSumm task 1a annotations: ``annotation/<TOPIC>.ann.txt`` (one
record per citance, fields joined by " | "; or ``.annv3.txt``; older
releases: ``.csv`` with a header row of the same names) read into
:class:`CitanceRecord` s, and ScisummNet's ``citing_sentences.json``. Part
of the CL-SciSumm reader (``readers.clscisumm``).

Quirks handled here: the line is split only at the known field names
(``| Citation Text:`` ...), so a ``|`` inside a text is kept; stray spaces
around keys and values; duplicated trailing fields (the first value wins);
a missing ``Annotator`` (None); ``NA`` offsets (empty list); facets spelled
``Method_Citation``, ``Method citation``, ``Result_Citation``,
``['Aim_Citation','Method_Citation']`` ... normalised to lists of
``FACETS``. A record missing a required field (citance number, articles,
reference offsets) is skipped and counted.
"""
import csv
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import srsly

from .clscisumm_reference import decode_mixed, normalise_space
from .common import ReaderError, ReadStats

FACETS = ("method", "results", "implication", "aim", "hypothesis")



@dataclass
class CitanceRecord:
    topic: str
    citance_number: str
    reference_article: str  # paper id, file extension removed
    citing_article: str  # paper id, file extension removed
    citation_offsets: List[str]
    citation_text: str  # plain text, <S> tags stripped
    reference_offsets: List[str]  # gold RP sids (task 1a)
    reference_text: str
    facets: List[str]  # normalised, see FACETS
    annotator: Optional[str]
    path: Path
    line: int


FIELDS = {
    "citance number": "citance_number",
    "reference article": "reference_article",
    "citing article": "citing_article",
    "citation marker offset": "citation_marker_offset",
    "citation marker": "citation_marker",
    "citation offset": "citation_offsets",
    "citation text": "citation_text",
    "reference offset": "reference_offsets",
    "reference text": "reference_text",
    "discourse facet": "facets",
    "annotator": "annotator",
}
REQUIRED = ("citance_number", "reference_article", "citing_article", "reference_offsets")
_KEY_RE = re.compile(
    r"(?:^|\|)\s*("
    + "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in sorted(FIELDS, key=len, reverse=True))
    + r")\s*:",
    re.IGNORECASE,
)
_S_TAG = re.compile(r"</?S\b[^>]*>", re.IGNORECASE)
_FACET_RE = re.compile(r"(method|results?|implication|aim|hypothesis)", re.IGNORECASE)


def split_fields(line: str) -> Dict[str, str]:
    """Split an annotation line at the known field names (so ``|`` inside a
    text is kept). The first occurrence of a field wins; values are stripped
    of spaces and trailing field separators."""
    matches = list(_KEY_RE.finditer(line))
    out: Dict[str, str] = {}
    for i, match in enumerate(matches):
        key = FIELDS[normalise_space(match.group(1).lower())]
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        # Strip spaces and the field separator(s) left before the next key.
        value = line[match.end():end].strip().rstrip("| \t")
        out.setdefault(key, value)
    return out


def parse_offsets(value: str) -> List[str]:
    """``['39','40']``, ``[39, 40]``, ``39,40`` or ``NA`` -> list of str ids."""
    value = value.strip()
    if not value or value.upper() == "NA":
        return []
    value = value.strip("[]")
    items = [item.strip().strip("'\"").strip() for item in value.split(",")]
    return [item for item in items if item and item.upper() != "NA"]


def strip_sentence_tags(value: str) -> str:
    """Plain text of an ``<S sid=..>...</S>`` sequence (entities unescaped)."""
    return normalise_space(html.unescape(_S_TAG.sub(" ", value)))


def normalise_facets(value: str) -> List[str]:
    """``Method_Citation``, ``Result citation``, ``['Aim_Citation','Method_Citation']``
    -> ``["method"]``, ``["results"]``, ``["aim", "method"]``; ``NA`` -> []."""
    out: List[str] = []
    for match in _FACET_RE.finditer(value):
        facet = match.group(1).lower()
        facet = "results" if facet.startswith("result") else facet
        if facet not in out:
            out.append(facet)
    return out


def _article_id(value: str) -> str:
    value = value.strip()
    return re.sub(r"\.(xml|txt)$", "", value, flags=re.IGNORECASE)


def annotation_topic(path: Union[str, Path]) -> str:
    """Topic id from an annotation file name: ``C00-2123.ann.txt`` and
    ``A00-2030_annotator.csv`` -> the ACL Anthology id."""
    name = Path(path).name
    match = re.match(r"[A-Z]\d{2}-\d{4}", name)
    return match.group(0) if match else name.split(".")[0]


def _csv_rows(text: str) -> Iterator[Tuple[int, Dict[str, str]]]:
    """``(line, values)`` per data row of a CSV annotation file (header row
    with the same field names as the ``.ann.txt`` records; unknown columns
    such as ``Citation Text Clean`` are ignored)."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        return
    keys = [FIELDS.get(normalise_space(h.lower())) for h in header]
    line = reader.line_num + 1
    for row in reader:
        values = {k: v.strip() for k, v in zip(keys, row) if k is not None}
        if any(v.strip() for v in row):
            yield line, values
        line = reader.line_num + 1


def _txt_rows(text: str) -> Iterator[Tuple[int, Dict[str, str]]]:
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield i, split_fields(line)


def read_annotations(path: Union[str, Path], *, topic: Optional[str] = None,
                     stats: Optional[ReadStats] = None) -> Tuple[List[CitanceRecord], int]:
    """All citance records of one annotation file (``.ann.txt``/``.annv3.txt``
    with `` | ``-separated fields, or ``.csv`` with a header row), and the
    number of records skipped as malformed (missing a required field:
    citance number, reference/citing article, reference offset). ``stats``
    (optional) gets the counts and the reasons with file:line.

    ``topic``: the topic the file belongs to (its topic directory), default
    the id in the file name. When it is given, an empty ``Reference Article``
    is that topic (CSV releases leave the column empty), not a missing field.
    """
    path = Path(path)
    from_place = topic
    topic = topic or annotation_topic(path)
    records: List[CitanceRecord] = []
    skipped = 0
    text = decode_mixed(path.read_bytes())
    rows = _csv_rows(text) if path.suffix.lower() == ".csv" else _txt_rows(text)
    for i, values in rows:
        if stats is not None:
            stats.read += 1
        if from_place and not values.get("reference_article"):
            values["reference_article"] = from_place
        missing = [k for k in REQUIRED if not values.get(k)]
        if missing:
            skipped += 1
            if stats is not None:
                stats.skip(ReaderError(path, i, "missing field", field=missing[0]))
            continue
        annotator = values.get("annotator") or None
        records.append(CitanceRecord(
            topic=topic,
            citance_number=values["citance_number"],
            reference_article=_article_id(values["reference_article"]),
            citing_article=_article_id(values["citing_article"]),
            citation_offsets=parse_offsets(values.get("citation_offsets", "")),
            citation_text=strip_sentence_tags(values.get("citation_text", "")),
            reference_offsets=parse_offsets(values["reference_offsets"]),
            reference_text=strip_sentence_tags(values.get("reference_text", "")),
            facets=normalise_facets(values.get("facets", "")),
            annotator=annotator,
            path=path,
            line=i,
        ))
        if stats is not None:
            stats.used += 1
    return records, skipped


def read_citing_sentences(path: Union[str, Path]) -> List[Dict[str, Any]]:
    """``citing_sentences.json`` of a ScisummNet topic (a list of dicts with
    ``citance_No``, ``citing_paper_id``, ``raw_text``, ``clean_text`` ...)."""
    path = Path(path)
    try:
        data = srsly.read_json(path)
    except ValueError as exc:
        raise ReaderError(path, None, f"invalid JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ReaderError(path, None, "expected a list of objects")
    return data
