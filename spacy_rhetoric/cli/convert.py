"""``spacy-rhetoric convert``: corpus files -> ``.spacy`` DocBin
(``readers.convert.convert_corpus``). The output is never written when no
record could be used (exit 1 with the reason, so make / ``spacy project run``
stop)."""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ..readers.convert import (  # noqa: F401 - re-exported (the library side is readers/convert.py)
    DIRECTORY_FORMATS,
    FORMATS,
    PAPER_FORMATS,
    NothingConverted,
    convert_corpus,
    get_reader,
)
from . import app
from .common import (
    grobid_option,
    grobid_timeout_option,
    guard,
    non_negative_int,
    nothing_done,
    printable,
    read_timeout_option,
)


def _check_format(value: str) -> str:
    if value not in FORMATS:
        raise typer.BadParameter(f"unknown format {value!r}; choose from: {', '.join(FORMATS)}")
    return value


def _check_errors(value: str) -> str:
    if value not in ("skip", "raise"):
        raise typer.BadParameter(f"must be 'skip' or 'raise', got {value!r}")
    return value


@app.command("convert")
def convert_cli(
    fmt: str = typer.Argument(..., metavar="FORMAT", callback=_check_format,
                              help="One of: " + ", ".join(FORMATS)),
    input_path: Path = typer.Argument(..., metavar="INPUT", help="Input file (or folder: CL-SciSumm topics, papers, CoreSC, AZ)"),
    output_path: Path = typer.Argument(..., metavar="OUTPUT", help="Output .spacy file"),
    lang: str = typer.Option("en", "--lang", help="Language of the blank tokenizer"),
    limit: int = typer.Option(0, "--limit", callback=non_negative_int, help="Stop after N docs (0 = all)"),
    errors: str = typer.Option("skip", "--errors", callback=_check_errors,
                               help="'skip' malformed records (counted) or 'raise' at the first"),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file that does not look like one this command writes"),
    grobid: Optional[str] = grobid_option(),
    grobid_timeout: float = grobid_timeout_option(),
    read_timeout: float = read_timeout_option(),
) -> None:
    """Convert a corpus to a .spacy DocBin with gold sentence boundaries and labels."""
    with guard("convert"):
        try:
            stats = convert_corpus(fmt, input_path, output_path, lang=lang, limit=limit, errors=errors,
                                   progress=True, force=force, grobid=grobid, grobid_timeout=grobid_timeout,
                                   read_timeout=read_timeout)
        except NothingConverted as err:
            nothing_done(str(err))
    msg.info(f"Records read: {stats.read}")
    msg.info(f"Docs written: {stats.docs} ({stats.sentences} sentences) -> {output_path}")
    if stats.skipped:
        msg.warn(f"Records skipped: {stats.skipped}")
        for reason, count in stats.reasons.most_common():
            msg.text(f"  {printable(reason)}: {count}")
        for example in stats.examples:
            msg.text(f"  e.g. {printable(example)}")
    else:
        msg.good("Records skipped: 0")
    for note, count in stats.notes.most_common():
        msg.text(f"  note: {printable(note)}: {count}")
