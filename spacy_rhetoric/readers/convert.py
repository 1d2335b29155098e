"""Corpus files -> ``.spacy`` DocBin with gold sentence boundaries, sentence
labels, sections, sids and doc ids (stored as user data, read back by the
registered readers and components): :func:`convert_corpus`, the library
side of ``spacy-rhetoric convert`` (``cli/convert.py``) and of ``make demo``.

The input and output paths are checked before any work; the output is written
to a temporary file and renamed into place when complete, and never when no
record could be used (:class:`NothingConverted`)."""
from functools import partial
from pathlib import Path
from typing import Callable, Dict, Optional

from ..errors import RhetoricError
from .budget import READ_TIMEOUT
from .pdf.grobid import TIMEOUT as GROBID_TIMEOUT

FORMATS: Dict[str, str] = {
    "csabstruct": "CSAbstruct .jsonl, one Doc per abstract",
    "pmc": "PMC-Sents-FULL .jsonl, one Doc per article",
    "scicite": "SciCite JSON lines, one Doc per citation context",
    "acl-arc": "ACL-ARC JSON lines, one Doc per citation context",
    "clscisumm": "CL-SciSumm topics dir, one Doc per reference paper",
    "mulms-az": "MuLMS-AZ .jsonl (expert zones of full papers), one Doc per paper with headings and gold labels",
    "coresc": "ART / CoreSC XML paper(s) (chemistry; CoreSC concepts), a file or a folder, one Doc per paper "
              "with headings, gold coarse labels and the concept as fine label",
    "az": "Argumentative Zoning .annot paper(s) (AZ-CL, computational linguistics; 7 zones), a file or a folder, "
          "one Doc per paper with headings, gold coarse labels and the zone as fine label",
    "tei": "GROBID TEI XML paper(s), a file or a folder, one Doc per paper",
    "jats": "JATS / PMC XML paper(s), a file or a folder, one Doc per paper",
    "s2orc": "S2ORC / doc2json JSON paper(s), a file or a folder, one Doc per paper",
    "text": "plain text / Markdown paper(s), a file or a folder, one Doc per paper",
    "pdf": "PDF paper(s) with a text layer, a file or a folder, one Doc per paper (--grobid URL: via GROBID)",
    "auto": "paper(s) in any of tei, jats, s2orc, text, pdf (detected per file), one Doc per paper",
}
DIRECTORY_FORMATS = ("clscisumm",)
PAPER_FORMATS = ("tei", "jats", "s2orc", "text", "pdf", "auto")  # readers.papers; a file or a folder
FILE_OR_FOLDER_FORMATS = PAPER_FORMATS + ("coresc", "az")


def get_reader(fmt: str, grobid: Optional[str] = None, **reading) -> Callable:
    """The reader of ``fmt``; a paper format's takes ``grobid`` and
    ``reading`` (``grobid_timeout``, ``read_timeout``: ``papers.read_papers``)."""
    if fmt in PAPER_FORMATS:
        from .papers import read_papers

        return partial(read_papers, fmt=fmt, grobid=grobid, **reading)
    from .az import read_az
    from .citation_intent import read_citation_intent
    from .clscisumm import read_reference_docs
    from .coresc import read_coresc
    from .csabstruct import read_csabstruct
    from .mulms import read_mulms
    from .pmc import read_pmc_sents

    readers = {
        "csabstruct": read_csabstruct,
        "pmc": read_pmc_sents,
        "scicite": read_citation_intent,
        "acl-arc": read_citation_intent,
        "clscisumm": read_reference_docs,
        "mulms-az": read_mulms,
        "coresc": read_coresc,
        "az": read_az,
    }
    return readers[fmt]


class NothingConverted(RhetoricError):
    """No record of the input could be used: no output is written."""


def convert_corpus(fmt: str, input_path: Path, output_path: Path, *, lang: str = "en",
                   limit: int = 0, errors: str = "skip", progress: bool = False, force: bool = False,
                   grobid: Optional[str] = None, grobid_timeout: float = GROBID_TIMEOUT,
                   read_timeout: Optional[float] = READ_TIMEOUT):
    """Convert ``input_path`` and write ``output_path`` (atomically); returns
    the ReadStats. Paths are checked first (``io.check_input``/``check_output``:
    PathError); :class:`NothingConverted` when no record was usable (the output
    is then left as it was). An existing output that is not a DocBin is
    replaced only with ``force``. ``grobid``: a GROBID server's URL that PDFs
    are sent to, ``grobid_timeout`` seconds a request; ``read_timeout``:
    seconds one paper file may take to read, else it is skipped and counted
    (paper formats only)."""
    import spacy
    from spacy.tokens import DocBin
    from tqdm import tqdm

    from ..io import atomic_path, check_input, check_output, prepare_outputs
    from .common import ReadStats

    if fmt not in FORMATS:
        raise RhetoricError(f"Unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if grobid and fmt not in PAPER_FORMATS:
        raise RhetoricError(f"--grobid reads PDFs: it needs a paper format ({', '.join(PAPER_FORMATS)}), not {fmt!r}")
    directory = fmt in DIRECTORY_FORMATS
    input_path = check_input(input_path, what=f"{fmt} input", file_ok=not directory,
                             dir_ok=directory or fmt in FILE_OR_FOLDER_FORMATS)
    output_path = check_output(output_path, what="output", inputs=[input_path], kind="spacy", force=force)
    prepare_outputs({"output": output_path})
    nlp = spacy.blank(lang)
    stats = ReadStats(name=f"{fmt} {input_path}")
    docbin = DocBin(store_user_data=True)
    reading = {"grobid_timeout": grobid_timeout, "read_timeout": read_timeout} if fmt in PAPER_FORMATS else {}
    docs = get_reader(fmt, grobid, **reading)(input_path, nlp, limit=limit, errors=errors, stats=stats)
    # disable=None: shown on a terminal only (stderr), never in captured output.
    for doc in tqdm(docs, desc=f"convert {fmt}", unit="doc", disable=None if progress else True):
        docbin.add(doc)
    stats.check()
    if not stats.docs:
        raise NothingConverted(_nothing_reason(fmt, input_path, stats))
    with atomic_path(output_path) as tmp:
        docbin.to_disk(tmp)
    return stats


def _nothing_reason(fmt: str, input_path: Path, stats) -> str:
    if not stats.read:
        if input_path.is_dir():
            return f"no {fmt} input found in the folder {input_path}"
        return f"{input_path} holds no records (empty file)"
    reasons = ", ".join(f"{reason} x{n}" for reason, n in stats.reasons.most_common(3))
    return (f"none of the {stats.read} records of {input_path} is usable as {fmt} "
            f"({reasons}); is it a {fmt} file? e.g. {stats.examples[0] if stats.examples else ''}")
