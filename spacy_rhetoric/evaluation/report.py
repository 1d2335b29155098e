"""The report a benchmark run writes: its figures under ``rows`` (and
whatever else the run measured) beside the date, the command line and the
seconds it took, as one JSON file (``benchmarks/<question>/results/``, read
by ``scripts/results_table.py``)."""
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from ..io import atomic_write_json


def new_report(started: float, argv: Optional[Sequence[str]] = None, **fields: Any) -> Dict[str, Any]:
    """``{"date", "command", "seconds", **fields}``: today's date, the command
    line (``argv``, default ``sys.argv``) and the whole seconds since ``started``."""
    command = " ".join(sys.argv if argv is None else argv)
    return {"date": time.strftime("%Y-%m-%d"), "command": command, "seconds": round(time.time() - started),
            **fields}


def write_report(out: Optional[Path], report: Dict[str, Any]) -> None:
    """Write ``report`` to ``out`` (its folder made; atomic: a temp file renamed); nothing without ``out``."""
    if out is None:
        return
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out, report, indent=1)
