"""Real papers in: one entry point for full-text papers in any supported
format, used by ``spacy-rhetoric convert`` and the registered
``spacy_rhetoric.PaperCorpus.v1``.

* :func:`detect_format` tells the format of a file by its content: a
  ``%PDF-`` header -> ``"pdf"``, the XML
  root element (``<TEI>`` -> ``"tei"``, ``<article>`` -> ``"jats"``,
  ``<PAPER>`` -> ``"clscisumm"``), the JSON keys (``body_text``,
  ``pdf_parse``, ``grobid_parse`` -> ``"s2orc"``), else UTF-8 text ->
  ``"text"``; a CL-SciSumm topic directory (``Reference_XML/``) is
  ``"clscisumm"``. Text that begins with ``<`` (``<b>Bold</b> claims.``) is
  text unless it is one of those XML documents: a ``.txt`` / ``.md`` file
  always, a file without an XML extension unless it declares itself XML.
* Files that are not papers are a ReaderError saying so, skipped and counted
  like any unusable file (:func:`not_a_paper`): images, tables (CSV, TSV,
  spreadsheets, tab-separated text), archives, HTML pages, and by their name
  a folder's README, LICENSE, CHANGELOG, ... -- the last only when the file
  was found in a folder, not named (``named``); a file read with its format
  given (``fmt="text"``, ``--format text``) is never sniffed.
* :func:`read_papers` yields one Doc per paper (see ``fulltext`` for what a
  Doc carries) from files and folders (searched recursively; with ``fmt``
  given, only files with that format's extensions; hidden files skipped).
  Each file is one record of the ReadStats: a malformed file raises a
  ReaderError naming it (``errors="raise"``) or is skipped and counted. A
  paper's id (``DOC_ID``) is unique in the corpus read (:func:`paper_ids`):
  its path relative to the folder given, without the format's extension
  (``a/paper`` for ``a/paper.tei.xml``; the file name's id for a file
  given), so two papers with the same file name are never merged. In
  a CL-SciSumm folder (``auto`` or ``clscisumm``) only the reference papers
  (``Reference_XML/*.xml``) are read.

With ``grobid`` (a GROBID server's URL), a PDF is sent to the server and
its TEI read by the TEI reader (``pdf.grobid``) instead of the PDF reader;
``grobid_timeout`` bounds each request, answer included.

Reading one file has a time budget, ``read_timeout`` seconds
(``readers.budget``; default :data:`~spacy_rhetoric.readers.budget.READ_TIMEOUT`,
0: none): a file past it is a ReaderError like any unusable file, skipped and
counted by :func:`read_papers` (a pathological PDF never stalls a batch).

One module per format: ``tei``, ``jats``, ``s2orc``, ``text``, ``pdf``
(``clscisumm`` reference papers are read by ``clscisumm``, with their
headings as ``HEADING`` too).
"""
import re
from functools import partial
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc

from .. import extensions
from ..errors import RhetoricError
from ..io import path_text
from .budget import READ_TIMEOUT, read_budget
from .common import ReaderError, ReadStats, check_errors_mode, doc_from_sentences, handle
from .fulltext import CITATIONS_KEY, Paper, doc_id_from_path, paper_doc, xml_root_name
from .jats import parse_jats
from .pdf import is_pdf, parse_pdf
from .pdf.grobid import TIMEOUT as GROBID_TIMEOUT
from .s2orc import S2ORC_KEYS, load_json, parse_s2orc
from .tei import parse_tei
from .text import WIDE, bom_encoding, parse_text

PAPER_FORMATS = ("tei", "jats", "s2orc", "text", "pdf")
FORMATS = PAPER_FORMATS + ("clscisumm",)
EXTENSIONS: Dict[str, Sequence[str]] = {
    "tei": (".xml",),
    "jats": (".xml", ".nxml"),
    "s2orc": (".json",),
    "text": (".txt", ".md", ".markdown"),
    "pdf": (".pdf",),
    "clscisumm": (".xml",),
}
PARSERS: Dict[str, Callable[[Path], Paper]] = {
    "tei": parse_tei,
    "jats": parse_jats,
    "s2orc": parse_s2orc,
    "text": parse_text,
    "pdf": parse_pdf,
}
_XML_ROOTS = {"TEI": "tei", "article": "jats", "PAPER": "clscisumm"}
_XML_SUFFIXES = (".xml", ".nxml", ".tei")
_XML_DECLARATION = re.compile(rb"<\?xml[\s?]|<!DOCTYPE\s+(?!html)", re.IGNORECASE)
PathLike = Union[str, Path]

# What is not a paper, by the file's extension.
NOT_PAPER_SUFFIXES: Dict[str, str] = {
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".svg", ".ico", ".eps",
                     ".heic"), "an image"),
    **dict.fromkeys((".csv", ".tsv", ".tab", ".xls", ".xlsx", ".ods", ".parquet", ".feather"), "a table"),
    **dict.fromkeys((".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".tar", ".zst", ".lz4"), "an archive"),
    **dict.fromkeys((".html", ".htm", ".xhtml"), "an HTML page (no reader for it)"),
    **dict.fromkeys((".mp3", ".wav", ".mp4", ".mov", ".avi", ".mkv"), "audio or video"),
}
# ... by its name, in a folder: the files that come with a corpus or a repository
NOT_PAPER_NAMES = re.compile(
    r"^(readme|license|licence|copying|copyright|notice|changelog|changes|history|news|authors|contributors|"
    r"contributing|code_of_conduct|security|citation|install|manifest|todo|makefile|dockerfile)(?:[._-].*)?$",
    re.IGNORECASE)


def not_a_paper(path: PathLike, head: bytes = b"", *, named: bool = False) -> Optional[str]:
    """Why the file at ``path`` is not a paper (its first bytes ``head``), or
    None: an image, a table, an archive, an HTML page (by extension), text
    in tab-separated columns (by content), or, when found in a folder (not
    ``named``), a README, LICENSE, CHANGELOG... by its name. (Any other
    binary file is refused by its NUL bytes.)"""
    path = Path(path)
    kind = NOT_PAPER_SUFFIXES.get(path.suffix.lower())
    if kind is None and head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] not in (b"<", b"{") and _is_tab_table(head):
        kind = "a table (tab-separated columns)"
    if kind is None and not named and NOT_PAPER_NAMES.match(path.name):
        kind = f"a {path.name.split('.')[0].upper()} file beside the papers (--format text reads it as one)"
    return None if kind is None else f"not a paper: {kind}"


def _is_tab_table(head: bytes, size: int = 4096) -> bool:
    """At least 3 lines, each with the same number (at least 1) of tabs
    between its words (not the tabs that indent a paragraph)."""
    lines = [line for line in head.split(b"\n")[:20] if line.strip()]
    if len(head) >= size:
        lines = lines[:-1]  # the last may be cut
    counts = {line.strip().count(b"\t") for line in lines}
    return len(lines) >= 3 and len(counts) == 1 and counts.pop() >= 1


def detect_format(path: PathLike, *, named: bool = False) -> str:
    """``"tei"``, ``"jats"``, ``"s2orc"``, ``"text"``, ``"pdf"`` or
    ``"clscisumm"``, by content; a ReaderError naming the file when it is
    none of them or not a paper (:func:`not_a_paper`; ``named``: the file was
    named, not found in a folder)."""
    path = Path(path)
    if path.is_dir():
        if _is_clscisumm_dir(path):
            return "clscisumm"
        raise ReaderError(path, None, "cannot detect the format of a directory (not CL-SciSumm topics)")
    head = _head(path, 4096)
    if is_pdf(head):
        return "pdf"
    if path.suffix.lower() == ".pdf":
        raise ReaderError(path, None, "not a PDF: no %PDF- header")
    reason = not_a_paper(path, head, named=named)
    if reason:
        raise ReaderError(path, None, reason)
    if b"\x00" in head:
        raise ReaderError(path, None, "cannot detect the format: binary file (NUL bytes)")
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if start.startswith(b"<"):
        root = xml_root_name(_head(path, 1 << 16))
        if root in _XML_ROOTS:
            return _XML_ROOTS[root]
        text_name = path.name.lower().endswith(EXTENSIONS["text"])
        if path.suffix.lower() in _XML_SUFFIXES or (_XML_DECLARATION.match(start) and not text_name):
            raise ReaderError(path, None, f"cannot detect the format: unknown XML root element <{root}>")
        if (root or "").lower() == "html" and not text_name:
            raise ReaderError(path, None, "not a paper: an HTML page (no reader for it)")
    if start.startswith(b"{"):
        record = load_json(path)
        if isinstance(record, dict) and any(key in record for key in S2ORC_KEYS):
            return "s2orc"
        raise ReaderError(path, None, "cannot detect the format: JSON without body_text, pdf_parse or "
                                      "grobid_parse (not S2ORC)", field="body_text")
    try:
        head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the 4096th byte
            raise ReaderError(path, None, "cannot detect the format: not UTF-8 text (binary file?)") from None
    return "text"


def _head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of a file as UTF-8 for sniffing: UTF-16 and
    UTF-32 text (by its byte-order mark, ``text.bom_encoding``) re-encoded."""
    with open(path, "rb") as fileh:
        head = fileh.read(size)
    codec = bom_encoding(head)
    if codec in WIDE:
        head = head.decode(codec, errors="ignore").encode("utf-8")
    return head


def _is_clscisumm_dir(path: Path) -> bool:
    return (path / "Reference_XML").is_dir() or any(path.glob("*/Reference_XML"))


def paper_files(paths: Union[PathLike, Iterable[PathLike]], fmt: str = "auto") -> Iterator[Path]:
    """Files named in ``paths`` and files under the folders named in it
    (sorted, recursively; with a format given, only its extensions)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    suffixes = None if fmt == "auto" else EXTENSIONS[fmt]
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"No such file or directory: {path}")
        if path.is_file():
            yield path
            continue
        if fmt in ("auto", "clscisumm") and _is_clscisumm_dir(path):
            # only the reference papers (not citing papers, annotations)
            yield from sorted(path.glob("Reference_XML/*.xml"))
            yield from sorted(path.glob("*/Reference_XML/*.xml"))
            continue
        for file in sorted(path.rglob("*")):
            rel = file.relative_to(path)
            if not file.is_file() or any(part.startswith(".") for part in rel.parts):
                continue
            if suffixes is None or file.name.lower().endswith(tuple(suffixes)):
                yield file


def named_files(paths: Union[PathLike, Iterable[PathLike]]) -> set:
    """The files named in ``paths`` themselves (not found in a folder)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    return {Path(p) for p in paths if Path(p).is_file()}


def keyed_paper_files(paths: Union[PathLike, Iterable[PathLike]], fmt: str = "auto") -> List[Tuple[str, Path]]:
    """``(key, path)`` of every file of :func:`paper_files`: the key is the
    path relative to the folder given (the file name for a file given; the
    path as given when two files given share a name; a name that is not UTF-8
    with its odd bytes escaped, ``io.path_text``). A file given twice is read
    once."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    items: Dict[str, Path] = {}
    for arg in paths:
        arg = Path(arg)
        for path in paper_files(arg, fmt):
            key = path_text(path.relative_to(arg).as_posix() if arg.is_dir() else path.name)
            if key in items and items[key].resolve() != path.resolve():
                key = path_text(path.as_posix())
            items.setdefault(key, path)
    return list(items.items())


def paper_ids(keys: Sequence[str]) -> Dict[str, str]:
    """Key (relative path) -> paper id, unique among ``keys``: the key
    without the format's extension (``a/paper.tei.xml`` -> ``a/paper``), or
    the whole key where two keys would give one id (``X.tei.xml`` and
    ``X.json`` beside each other)."""
    ids = {}
    for key in keys:
        parent, _, name = key.rpartition("/")
        ids[key] = f"{parent}/{doc_id_from_path(name)}" if parent else doc_id_from_path(name)
    counts: Dict[str, int] = {}
    for value in ids.values():
        counts[value] = counts.get(value, 0) + 1
    return {key: key if counts[value] > 1 else value for key, value in ids.items()}


def same_name_papers(ids: Dict[str, str]) -> int:
    """How many papers of :func:`paper_ids` keep their extension in their id
    (their name without it is another paper's too)."""
    return sum(1 for key, value in ids.items() if value == key and paper_ids([key])[key] != key)


def read_paper(path: PathLike, nlp: Language, *, fmt: str = "auto", splitter: str = "sentencizer",
               doc_id: Optional[str] = None, grobid: Optional[str] = None, grobid_timeout: float = GROBID_TIMEOUT,
               read_timeout: Optional[float] = READ_TIMEOUT, named: bool = False) -> Doc:
    """One file as one Doc (a ReaderError naming the file if it is not
    usable, or not a paper: :func:`not_a_paper`). ``doc_id``: the paper's id
    (default: the file name without extension; a CL-SciSumm paper keeps the
    id its XML gives). ``grobid``: a GROBID server's URL that PDFs are sent
    to, ``grobid_timeout`` seconds a request. ``read_timeout``: seconds the
    reading may take (the module docstring). ``named``: the user named this
    file (not found in a folder): a README... is read like any text."""
    path = Path(path)
    if fmt == "auto":
        fmt = detect_format(path, named=named)
    if fmt not in PARSERS and fmt != "clscisumm":
        raise RhetoricError(f"format must be 'auto' or one of {FORMATS}, got {fmt!r}")
    parse = PARSERS.get(fmt)
    if fmt == "pdf" and grobid:
        from .pdf.grobid import grobid_tei, parse_grobid_tei

        tei = grobid_tei(path, grobid, timeout=grobid_timeout)  # not part of the read budget
        parse = partial(parse_grobid_tei, tei=tei, url=grobid)
    with read_budget(path, read_timeout):
        if fmt == "clscisumm":
            return _clscisumm_doc(path, nlp)
        paper = parse(path)
        if not any(p.text for p in paper.paragraphs):
            raise ReaderError(path, None, f"no text found ({fmt})")
        if doc_id is not None:
            paper.doc_id = doc_id
        return paper_doc(nlp, paper, splitter=splitter)


def _clscisumm_doc(path: Path, nlp: Language) -> Doc:
    """A CL-SciSumm reference paper like the other formats: gold sentences
    and sids, ``HEADING`` (its ``<SECTION title>``, "Abstract"), ``TITLE``
    (the title sentence is not in the Doc), no ``SECTION``."""
    from .clscisumm import ABSTRACT, TITLE, read_reference_xml

    paper = read_reference_xml(path)
    sents = [s for s in paper.sentences if s.section != TITLE]
    if not sents:
        raise ReaderError(path, None, "no sentences found (clscisumm)")
    doc = doc_from_sentences(nlp, [s.text for s in sents], sids=[s.sid for s in sents],
                             doc_id=paper.paper_id)
    headings = ["Abstract" if s.section == ABSTRACT else s.section for s in sents]
    extensions.set_span_values(doc, extensions.HEADING, list(doc.sents), headings)
    doc.spans[CITATIONS_KEY] = []  # the XML marks no citations
    if paper.title:
        extensions.set_doc_value(doc, extensions.TITLE, paper.title)
    return doc


def read_papers(
    paths: Union[PathLike, Iterable[PathLike]],
    nlp: Language,
    *,
    fmt: str = "auto",
    splitter: str = "sentencizer",
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
    grobid: Optional[str] = None,
    grobid_timeout: float = GROBID_TIMEOUT,
    read_timeout: Optional[float] = READ_TIMEOUT,
) -> Iterator[Doc]:
    """Yield one Doc per paper file under ``paths`` (files or folders).
    ``fmt``: ``"auto"`` (:func:`detect_format` per file) or one of
    :data:`FORMATS`; ``splitter``: ``"sentencizer"`` or ``"senter"`` for
    text without gold sentences; ``limit`` > 0 stops after that many Docs.
    A file that cannot be read raises a ReaderError naming it
    (``errors="raise"``) or is skipped and counted in ``stats``. ``grobid``,
    ``grobid_timeout``, ``read_timeout``: see :func:`read_paper`."""
    check_errors_mode(errors)
    if fmt != "auto" and fmt not in FORMATS:
        raise RhetoricError(f"format must be 'auto' or one of {FORMATS}, got {fmt!r}")
    stats = stats if stats is not None else ReadStats(name="papers")
    n_docs = 0
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files = keyed_paper_files(paths, fmt)
    named = named_files(paths)
    ids = paper_ids([key for key, _ in files])
    kept_apart = same_name_papers(ids)
    if kept_apart:
        stats.notes["papers with one name kept apart (id = file name with extension)"] += kept_apart
    for key, path in files:
        if limit > 0 and n_docs >= limit:
            return
        stats.read += 1
        try:
            doc = read_paper(path, nlp, fmt=fmt, splitter=splitter, doc_id=ids[key], grobid=grobid,
                             grobid_timeout=grobid_timeout, read_timeout=read_timeout, named=path in named)
        except ReaderError as err:
            handle(err, errors, stats)
            continue
        except OSError as err:
            handle(ReaderError(path, None, f"cannot read: {err}"), errors, stats)
            continue
        except RecursionError:
            handle(ReaderError(path, None, "nested too deeply to read"), errors, stats)
            continue
        n_docs += 1
        stats.used += 1
        stats.docs += 1
        stats.sentences += sum(1 for _ in doc.sents) if len(doc) else 0
        yield doc
