"""What every sub-command shares: one failure line and exit 1 for an ordinary
mistake (``fail``, ``guard``), and option validators for typer callbacks."""
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Type

import typer
from thinc.api import ConfigValidationError
from wasabi import msg

from ..errors import RhetoricError
from ..io import disk_full

# Errors that mean "the user gave us something we cannot use": one line, exit 1.
# RhetoricError is the base of the project's own (PathError, ReaderError,
# SearchIndexError, CorpusBuildError, AlignmentError, PhraseFormatError, ...);
# ConfigValidationError: a config file with a bad or missing setting.
USER_ERRORS: Tuple[Type[BaseException], ...] = (RhetoricError, ConfigValidationError, FileNotFoundError,
                                                 NotADirectoryError, IsADirectoryError, PermissionError)


def fail(text: str, details: Optional[str] = None) -> None:
    """Print one failure line (and optional details) and exit with code 1."""
    msg.fail(text, details, exits=1)


@contextmanager
def guard(what: str = "") -> Iterator[None]:
    """Turn the user errors raised inside the block (``USER_ERRORS``, a full
    disk: ``io.disk_full``) into ``fail``; other exceptions propagate with
    their traceback."""
    try:
        with disk_full():
            yield
    except USER_ERRORS as err:
        prefix = f"{what}: " if what else ""
        fail(f"{prefix}{err}")


def positive_int(value: int) -> int:
    """typer callback: the option must be >= 1."""
    if value is not None and value < 1:
        raise typer.BadParameter(f"must be at least 1, got {value}")
    return value


def non_negative_int(value: int) -> int:
    """typer callback: the option must be >= 0."""
    if value is not None and value < 0:
        raise typer.BadParameter(f"must be 0 or more, got {value}")
    return value


# --gpu-id of the sub-commands that run torch models (as spacy train's): -1 = CPU, N = GPU N.
GPU_ID_HELP = "GPU id for the torch models (-1 = CPU), as spacy train --gpu-id"
# --gpu-id of the sub-commands that run a pipeline (util.use_device: spacy.require_gpu before loading it).
PIPELINE_GPU_HELP = "GPU id for the pipeline and its torch models (-1 = CPU), as spaCy's --gpu-id"


def nothing_done(reason: str) -> None:
    """Exit 1 with a line saying why nothing usable was produced."""
    fail(f"Nothing done: {reason}")


def report_skipped(summary: Dict[str, Any]) -> None:
    """The inputs a build (label, annotate) skipped and counted, the first 20
    with their reason."""
    if summary["inputs_skipped"]:
        msg.warn(f"{summary['inputs_skipped']} inputs skipped:")
        for item in summary["skipped"][:20]:
            msg.text(f"  {item['reason']}")


def split_ids(value: Optional[str]) -> Optional[List[str]]:
    """A comma-separated list of ids, or the path of a file of ids (one per
    line or comma-separated); None stays None."""
    if value is None:
        return None
    path = Path(value)
    if path.is_file():
        value = path.read_text(encoding="utf8").replace("\n", ",")
    return [v.strip() for v in value.split(",") if v.strip()]


# Options that several commands share, declared once (typer reads a parameter's default as its option).

def grobid_option() -> Any:
    return typer.Option(None, "--grobid", metavar="URL",
                        help="Send PDFs to this GROBID server (e.g. http://localhost:8070) and read its TEI; "
                             "without it (the default) PDFs are read directly")


def grobid_timeout_option() -> Any:
    from ..readers.pdf.grobid import TIMEOUT

    return typer.Option(TIMEOUT, "--grobid-timeout", min=0.001, metavar="SECONDS",
                        help="Seconds one GROBID request may take in all, answer included "
                             "(a PDF whose request runs past it is skipped and counted)")


def read_timeout_option() -> Any:
    from ..readers.budget import READ_TIMEOUT

    return typer.Option(READ_TIMEOUT, "--read-timeout", min=0, metavar="SECONDS",
                        help="Seconds reading one paper file may take (a pathological file past it is skipped "
                             "and counted); 0 = no limit")
