"""What every sub-command shares: one failure line and exit 1 for an ordinary
mistake (``fail``, ``guard``), option validators for typer callbacks, and
``printable``: text from papers (sentences, headings, ids, file names) as it
may reach a terminal, every control character shown, never obeyed."""
import re
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


# C0 and C1 control characters (ESC, BEL, CSI, backspace, carriage return, ...) and the
# bidirectional overrides and isolates that reorder what follows them on screen.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(match: "re.Match") -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: Any, *, lines: bool = False) -> str:
    """``text`` as one terminal line: tabs and line breaks as spaces (with
    ``lines``, line breaks kept), every other control character (an escape
    sequence's ESC, BEL, ...) written out as ``\\x1b`` / ``\\u202e``, so that
    paper text can neither move the cursor, retitle or clear the terminal
    nor reorder what is shown."""
    text = str(text).replace("\t", " ").replace("\r\n", "\n").replace("\r", "\n")
    if lines:
        return "\n".join(_CONTROL.sub(_shown, line) for line in text.split("\n"))
    return _CONTROL.sub(_shown, text.replace("\n", " "))


# What JSON leaves raw with ensure_ascii=False: the C1 controls and the bidirectional marks.
_JSON_RAW = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def json_line(value: Any) -> str:
    """``value`` as one JSON line for a terminal: non-ASCII text kept as it
    is, every control character escaped (``\\u001b``, ``\\u009b``, ``\\u202e``)."""
    import json

    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def fail(text: str, details: Optional[str] = None) -> None:
    """Print one failure line (and optional details) and exit with code 1;
    both may quote paper text or file names (``printable``)."""
    msg.fail(printable(text, lines=True), None if details is None else printable(details, lines=True), exits=1)


@contextmanager
def guard(what: str = "") -> Iterator[None]:
    """Turn the user errors raised inside the block (``USER_ERRORS``, a full
    disk: ``io.disk_full``) into ``fail``; other exceptions propagate with
    their traceback; transformers refusing a model folder's own code
    (``ml.hf_safe``) and any error spaCy raises while it loads a pipeline
    folder (``loading_pipeline``: an edited config, a ``lang`` that is a
    path, weights that do not fit their dimensions) are one line too."""
    from ..ml.hf_safe import is_remote_code_refusal, refusal_text, refused_source

    prefix = f"{what}: " if what else ""
    try:
        with disk_full():
            yield
    except USER_ERRORS as err:
        if loading_pipeline(err):  # e.g. a config block that no longer fits: the folder is at fault
            fail(f"{prefix}cannot load the pipeline (a damaged or edited pipeline folder?): {err}")
        fail(f"{prefix}{err}")
    except Exception as err:  # noqa: BLE001 - only the two kinds below; anything else is re-raised
        if is_remote_code_refusal(err):
            fail(prefix + refusal_text(refused_source(err)))
        if not loading_pipeline(err):
            raise
        first = (str(err).strip().splitlines() or [""])[0]
        first = first if len(first) <= 300 else first[:150] + " … " + first[-140:]
        fail(f"{prefix}cannot load the pipeline (a damaged or edited pipeline folder?): "
             f"{type(err).__name__}: {first}")


# spaCy's functions that load a pipeline from a folder or package (every spacy.load of one).
_PIPELINE_LOADERS = frozenset(["load_model_from_path", "load_model_from_package", "load_model_from_init_py"])


def loading_pipeline(err: BaseException) -> bool:
    """Whether ``err`` was raised while spaCy loaded a pipeline (a frame of
    ``spacy/util.py``'s ``load_model_from_path`` or its package loaders on
    its traceback): the pipeline's files, not the command, are at fault."""
    import traceback

    for frame, _ in traceback.walk_tb(err.__traceback__):
        code = frame.f_code
        if code.co_name in _PIPELINE_LOADERS and Path(code.co_filename).parts[-2:] == ("spacy", "util.py"):
            return True
    return False


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
            msg.text(f"  {printable(item['reason'])}")


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
