"""Plain text and Markdown papers (UTF-8; UTF-16 and UTF-32 with a byte-order mark).

:func:`decode_text` is the one decoder of text files (papers, label's ``.txt``,
link's inputs; ``papers.detect_format`` sniffs with :func:`bom_encoding`):
UTF-16 / UTF-32 by their byte-order mark, else UTF-8 (a BOM allowed), and
every line end (CRLF, a lone CR of old Mac files) as ``\n``.

Paragraphs are blocks separated by blank lines; the lines of a block are
joined with spaces. A line is a heading when it is

* a Markdown heading (``## 2.1 Results``; the ``#`` marks are dropped),
* a numbered heading: ``2``, ``2.1``, ``2.1.`` or a Roman ``IV.`` followed by
  at most 12 words starting with a capital and not ending in a full stop
  ("2.1 Results", "IV. EXPERIMENTS"),
* a short line of capitals (at most 8 words, "MATERIALS AND METHODS"), or
  a usual section name alone ("Abstract", "Related work", "Conclusions"),

and it stands on its own line (a heading on the first line of a block starts
the block; the rest is a paragraph). A level-1 Markdown heading as the first
block is the title. Text under an "Abstract" heading gets the heading
``"Abstract"``; everything from a "References" / "Bibliography" heading on is
left out. There is no citation markup in plain text, so ``doc.spans
["citations"]`` is empty.
"""
import codecs
import re
from pathlib import Path
from typing import List, Optional, Union

from .common import ReaderError
from .fulltext import ABSTRACT, Paper, Paragraph, doc_id_from_path, norm_space

_MARKDOWN = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_NUMBERED = re.compile(r"^\s*((?:\d+(?:\.\d+)*\.?)|(?:[IVX]+\.))\s+(\S.*)$")
_NAMED = re.compile(
    r"^\s*(abstract|introduction|background|related work|previous work|methods?|materials and methods|"
    r"methodology|experiments?|results?|results and discussion|discussion|evaluation|conclusions?|"
    r"conclusions? and future work|future work|limitations|acknowledge?ments?|references|bibliography|"
    r"appendix)\s*:?\s*$",
    re.IGNORECASE,
)
_END = re.compile(r"^(references|bibliography)$", re.IGNORECASE)


def detect_heading(line: str) -> Optional[str]:
    """The heading text of ``line`` if it is a heading line, else None."""
    line = line.strip()
    if not line or len(line) > 120:
        return None
    match = _MARKDOWN.match(line)
    if match:
        return norm_space(match.group(2)) or None
    match = _NUMBERED.match(line)
    if match:
        words = match.group(2).split()
        if len(words) <= 12 and words[0][:1].isupper() and not line.endswith((".", ",", ";", ":")):
            return norm_space(line)
        return None
    if _NAMED.match(line):
        return norm_space(line.rstrip(":"))
    letters = [c for c in line if c.isalpha()]
    if (len(letters) >= 3 and line.upper() == line and len(line.split()) <= 8
            and not line.endswith((".", ","))):
        return norm_space(line)
    return None


def _heading_name(heading: str) -> str:
    """Heading without its number, lower-cased ("2 Related Work" -> "related work")."""
    match = _NUMBERED.match(heading)
    return (match.group(2) if match else heading).strip().lower()


# UTF-32's marks first: UTF-32-LE's begins with UTF-16-LE's.
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
WIDE = ("utf-16", "utf-32")  # encodings whose text holds NUL bytes


def bom_encoding(head: bytes) -> Optional[str]:
    """The encoding that a byte-order mark at the start of ``head`` names
    (``"utf-32"``, ``"utf-16"``, ``"utf-8-sig"``), else None."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return None


def decode_text(data: bytes, path: Union[str, Path]) -> str:
    """The text of a file's bytes (see the module docstring), line ends as
    ``\n``; a ReaderError naming ``path`` for a binary file (NUL bytes) or
    bytes that are not text in their encoding."""
    codec = bom_encoding(data)
    if codec in WIDE:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError as exc:
            raise ReaderError(path, None, f"invalid {codec.upper()} after its byte-order mark: {exc.reason}") from None
        if "\x00" in text:
            raise ReaderError(path, None, "binary file (NUL characters), not text")
    else:
        if b"\x00" in data:
            raise ReaderError(path, None, "binary file (NUL bytes), not text")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ReaderError(path, line, f"invalid UTF-8 (byte 0x{data[exc.start]:02x}): not UTF-8 text, or a "
                                          "binary file; convert it to UTF-8 first") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text_file(path: Path) -> str:
    """:func:`decode_text` of a file."""
    return decode_text(Path(path).read_bytes(), path)


def parse_text(path: Path) -> Paper:
    path = Path(path)
    text = read_text_file(path)
    title: Optional[str] = None
    heading: Optional[str] = None
    headings: List[Optional[str]] = []
    paragraphs: List[Paragraph] = []
    blocks = [b for b in re.split(r"\n[ \t]*\n", text) if b.strip()]
    for i, block in enumerate(blocks):
        lines = [line for line in block.split("\n") if line.strip()]
        found = detect_heading(lines[0])
        if found is not None:
            if i == 0 and _MARKDOWN.match(lines[0]) and len(_MARKDOWN.match(lines[0]).group(1)) == 1:
                title = found
            else:
                name = _heading_name(found)
                if _END.match(name):
                    break
                heading = ABSTRACT if name == "abstract" else found
                if heading != ABSTRACT:
                    headings.append(heading)
            lines = lines[1:]
        body = norm_space(" ".join(lines))
        if body:
            paragraphs.append(Paragraph(text=body, heading=heading))
    return Paper(doc_id=doc_id_from_path(path), title=title, paragraphs=paragraphs, headings=headings)
