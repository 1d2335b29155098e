"""A time budget for reading one paper file (``--read-timeout`` of convert,
annotate and index): :func:`read_budget` opens it around the reading of one
file, and the readers call :func:`check_budget` in their loops (per page and
per few thousand characters of a PDF, per paragraph of a paper). Past the
budget the check raises a :class:`~spacy_rhetoric.readers.common.ReaderError`
naming the file, which the batch commands skip and count like any other
unusable file, so one pathological file never stalls a batch.

The budget is kept per thread (readers running in several threads each have
their own) and a check outside any budget does nothing. It measures wall-clock
time from the start of the reading; waiting for a GROBID server is not part
of it (``--grobid-timeout`` bounds that).
"""
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union

from .common import ReaderError

READ_TIMEOUT = 120.0  # seconds; a 100-page PDF reads in a few seconds
_STATE = threading.local()


@contextmanager
def read_budget(path: Union[str, Path], seconds: Optional[float]) -> Iterator[None]:
    """Reading ``path`` inside the block may take ``seconds`` (None or 0:
    no limit); a budget opened inside another one replaces it until the
    block ends."""
    previous = getattr(_STATE, "budget", None)
    _STATE.budget = (time.monotonic() + seconds, seconds, Path(path)) if seconds and seconds > 0 else None
    try:
        yield
    finally:
        _STATE.budget = previous


def check_budget() -> None:
    """A ReaderError naming the file when its reading is past its budget."""
    budget = getattr(_STATE, "budget", None)
    if budget is not None and time.monotonic() > budget[0]:
        raise ReaderError(budget[2], None, f"reading took longer than {budget[1]:g} s (--read-timeout); "
                                           "a pathological file?")
