"""What every job's run shares: its error types, its progress bar and
skip-and-count."""
from typing import Any, Dict, List

from ..errors import RhetoricError


class JobError(RhetoricError):
    """A run cannot start (e.g. the Dask scheduler it asks for is missing)."""


class CorpusBuildError(JobError):
    """A job over a corpus cannot start or finish (bad arguments or inputs,
    an incompatible resume, no usable input)."""


class NoProgress:
    """The progress bar of a run that shows none."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(show: bool, *, total: int, initial: int, desc: str, unit: str = "file") -> Any:
    """A tqdm bar over a build's inputs (``initial``: those done by an
    earlier run), or :class:`NoProgress`."""
    if not show:
        return NoProgress()
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit=unit, desc=desc)


def record_skip(skipped: List[Dict[str, str]], key: str, reason: str, progress: Any) -> None:
    """Skip-and-count: an unusable input, recorded with its reason (the
    summary's ``skipped``) and counted as done on the progress bar."""
    skipped.append({"input": key, "reason": reason})
    progress.update(1)
