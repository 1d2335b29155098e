"""Plain text and Markdown papers (UTF-8; UTF-16 and UTF-32 with a byte-order mark).

:func:`decode_text` is the one decoder of text files (papers, label's ``.txt``,
link's inputs; ``papers.detect_format`` sniffs with :func:`bom_encoding`):
UTF-16 / UTF-32 by their byte-order mark, else UTF-8 (a BOM allowed), and
every line end (CRLF, a lone CR of old Mac files) as ``\n``.

Paragraphs are blocks separated by blank lines; the lines of a block are
joined with spaces (without one between two lines of Chinese or Japanese,
which have none). A line is a heading when it is

* a Markdown heading (``## 2.1 Results``; the ``#`` marks are dropped),
* a numbered heading: ``2``, ``2.1``, ``2.1.`` or a Roman ``IV.`` followed by
  at most 12 words starting with a capital and not ending in a full stop
  ("2.1 Results", "IV. EXPERIMENTS"),
* a short line of capitals (at most 8 words, "MATERIALS AND METHODS"; only
  letters that have a case count: a line of Chinese or Japanese is never a
  heading for having no lower case), or
* a usual section name alone ("Abstract", "Related work", "Conclusions";
  "摘要", "引言", "参考文献", ...),

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
# Section names of Chinese and Japanese papers -> the English name the rules above use.
_CJK_NAMES = {
    "摘要": "abstract", "概要": "abstract", "要旨": "abstract", "内容提要": "abstract",
    "引言": "introduction", "前言": "introduction", "绪论": "introduction", "緒論": "introduction",
    "はじめに": "introduction", "序論": "introduction", "相关工作": "related work", "関連研究": "related work",
    "方法": "methods", "研究方法": "methods", "手法": "methods", "实验": "experiments", "実験": "experiments",
    "结果": "results", "実験結果": "results", "讨论": "discussion", "考察": "discussion",
    "结论": "conclusions", "結論": "conclusions", "总结": "conclusions", "おわりに": "conclusions",
    "致谢": "acknowledgements", "謝辞": "acknowledgements", "参考文献": "references", "附录": "appendix",
    "付録": "appendix",
}
_CJK_SENTENCE_END = ("。", "，", "；", "：", "！", "？", "、")
_CJK_TEXT = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")


def _uncased(char: str) -> bool:
    """A letter without upper and lower case (Chinese, Japanese, Arabic, ...)."""
    return char.isalpha() and char.lower() == char.upper()


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
        first = words[0][:1]
        if (len(words) <= 12 and (first.isupper() or (_uncased(first) and len(match.group(2)) <= 30))
                and not line.endswith((".", ",", ";", ":") + _CJK_SENTENCE_END)):
            return norm_space(line)
        return None
    if _NAMED.match(line) or line.rstrip(":：") in _CJK_NAMES:
        return norm_space(line.rstrip(":："))
    letters = [c for c in line if c.isalpha()]
    if (len(letters) >= 3 and not any(_uncased(c) for c in letters) and line.upper() == line
            and len(line.split()) <= 8 and not line.endswith((".", ","))):
        return norm_space(line)
    return None


def _heading_name(heading: str) -> str:
    """Heading without its number, lower-cased ("2 Related Work" -> "related work")."""
    match = _NUMBERED.match(heading)
    name = (match.group(2) if match else heading).strip().lower()
    return _CJK_NAMES.get(name, name)


def _join_lines(lines: List[str]) -> str:
    """The lines of a block as one paragraph: a space between two lines,
    none between two lines of Chinese or Japanese text."""
    text = ""
    for line in lines:
        line = line.strip()
        if text and not (_CJK_TEXT.match(text[-1]) and _CJK_TEXT.match(line[:1] or " ")):
            text += " "
        text += line
    return text


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
        body = norm_space(_join_lines(lines))
        if body:
            paragraphs.append(Paragraph(text=body, heading=heading))
    return Paper(doc_id=doc_id_from_path(path), title=title, paragraphs=paragraphs, headings=headings)
