"""What the parts of ``bench_pipeline_speed.py`` share: the paths (CSAbstruct,
``configs/rhetoric_trf.cfg``, the converted train corpus), torch threads, the
CSAbstruct reader and the wall/CPU clock.
"""
import json
import os
import time
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "csabstruct"
CONFIG = ROOT / "configs" / "rhetoric_trf.cfg"
INIT_CORPUS = ROOT / "corpus" / "csabstruct_train.spacy"


def set_threads(n: int) -> int:
    import torch

    n = n or os.cpu_count() or 1
    torch.set_num_threads(n)
    return torch.get_num_threads()


def load_abstracts(path: Path) -> List[List[str]]:
    with path.open(encoding="utf8") as f:
        return [json.loads(line)["sentences"] for line in f if line.strip()]


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0
