"""``spacy-rhetoric convert``: corpus files -> ``.spacy`` DocBin with gold
sentence boundaries, sentence labels, sections, sids and doc ids (stored as
user data, read back by the registered readers and components)."""
from functools import partial
from pathlib import Path
from typing import Callable, Dict

import typer
from wasabi import msg

from . import app

FORMATS: Dict[str, str] = {
    "csabstruct": "CSAbstruct .jsonl, one Doc per abstract",
    "pmc": "PMC-Sents-FULL .jsonl, one Doc per article",
    "scicite": "SciCite JSON lines, one Doc per citation context",
    "acl-arc": "ACL-ARC JSON lines, one Doc per citation context",
    "clscisumm": "CL-SciSumm topics dir, one Doc per reference paper",
    "tei": "GROBID TEI XML paper(s), a file or a folder, one Doc per paper",
    "jats": "JATS / PMC XML paper(s), a file or a folder, one Doc per paper",
    "s2orc": "S2ORC / doc2json JSON paper(s), a file or a folder, one Doc per paper",
    "text": "plain text / Markdown paper(s), a file or a folder, one Doc per paper",
    "auto": "paper(s) in any of tei, jats, s2orc, text (detected per file), one Doc per paper",
}
PAPER_FORMATS = ("tei", "jats", "s2orc", "text", "auto")  # readers.papers; a file or a folder


def get_reader(fmt: str) -> Callable:
    if fmt in PAPER_FORMATS:
        from ..readers.papers import read_papers

        return partial(read_papers, fmt=fmt)
    from ..readers.citation_intent import read_citation_intent
    from ..readers.clscisumm import read_reference_docs
    from ..readers.csabstruct import read_csabstruct
    from ..readers.pmc import read_pmc_sents

    readers = {
        "csabstruct": read_csabstruct,
        "pmc": read_pmc_sents,
        "scicite": read_citation_intent,
        "acl-arc": read_citation_intent,
        "clscisumm": read_reference_docs,
    }
    return readers[fmt]


def convert_corpus(fmt: str, input_path: Path, output_path: Path, *, lang: str = "en",
                   limit: int = 0, errors: str = "skip"):
    """Convert ``input_path`` and write ``output_path``; returns the ReadStats."""
    import spacy
    from spacy.tokens import DocBin

    from ..readers.common import ReadStats

    if fmt not in FORMATS:
        raise ValueError(f"Unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if not input_path.exists():
        raise FileNotFoundError(f"No such file or directory: {input_path}")
    nlp = spacy.blank(lang)
    stats = ReadStats(name=f"{fmt} {input_path}")
    docbin = DocBin(store_user_data=True)
    for doc in get_reader(fmt)(input_path, nlp, limit=limit, errors=errors, stats=stats):
        docbin.add(doc)
    stats.check()
    output_path.parent.mkdir(parents=True, exist_ok=True)
    docbin.to_disk(output_path)
    return stats


@app.command("convert")
def convert_cli(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="One of: " + ", ".join(FORMATS)),
    input_path: Path = typer.Argument(..., metavar="INPUT", help="Input file (or CL-SciSumm topics directory)"),
    output_path: Path = typer.Argument(..., metavar="OUTPUT", help="Output .spacy file"),
    lang: str = typer.Option("en", "--lang", help="Language of the blank tokenizer"),
    limit: int = typer.Option(0, "--limit", help="Stop after N docs (0 = all)"),
    errors: str = typer.Option("skip", "--errors",
                               help="'skip' malformed records (counted) or 'raise' at the first"),
) -> None:
    """Convert a corpus to a .spacy DocBin with gold sentence boundaries and labels."""
    from ..readers.common import ReaderError

    if fmt not in FORMATS:
        msg.fail(f"Unknown format {fmt!r}", "Choose from: " + ", ".join(FORMATS), exits=1)
    if errors not in ("skip", "raise"):
        msg.fail(f"--errors must be 'skip' or 'raise', got {errors!r}", exits=1)
    try:
        stats = convert_corpus(fmt, input_path, output_path, lang=lang, limit=limit, errors=errors)
    except (ReaderError, FileNotFoundError) as err:
        msg.fail(str(err), exits=1)
    msg.info(f"Records read: {stats.read}")
    msg.info(f"Docs written: {stats.docs} ({stats.sentences} sentences) -> {output_path}")
    if stats.skipped:
        msg.warn(f"Records skipped: {stats.skipped}")
        for reason, count in stats.reasons.most_common():
            msg.text(f"  {reason}: {count}")
        for example in stats.examples:
            msg.text(f"  e.g. {example}")
    else:
        msg.good("Records skipped: 0")
    for note, count in stats.notes.most_common():
        msg.text(f"  note: {note}: {count}")
