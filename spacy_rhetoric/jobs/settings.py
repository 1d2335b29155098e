"""What every corpus job keeps in its output folder: the file names
(``shards/``, ``build_config.json``, ``summary.json``, the lock), the
per-job settings record a resumed run must match, the lock of one run at a
time, ``--code`` files, and the clean-up of a job that produced nothing."""
import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Union

import srsly

from ..io import atomic_write_json, output_lock, remove_stale_temps
from .common import CorpusBuildError

SHARD_DIR = "shards"
CONFIG_FILE = "build_config.json"
SUMMARY_FILE = "summary.json"
# Held (``io.output_lock``) by the run that writes the folder, removed when it ends.
LOCK_FILE = ".lock"
# The outputs of ``spacy-rhetoric annotate`` (``spacy_rhetoric.apps.annotate``).
ANNOTATION_FILES = ("annotations.jsonl", "annotations.spacy")
# The outputs of ``spacy-rhetoric label`` (``spacy_rhetoric.corpus_builder``).
LABEL_FILES = ("train.jsonl", "train.spacy", "valid.jsonl", "valid.spacy")
# Every file a job writes beside its shards: never an input found in a folder.
JOB_FILES = frozenset([CONFIG_FILE, SUMMARY_FILE, LOCK_FILE, *ANNOTATION_FILES, *LABEL_FILES])

# on_shard(input, header): called after each shard is written
OnShard = Optional[Callable[[Any, Dict[str, Any]], None]]


def import_code(code: Optional[Union[str, Path]]) -> None:
    """Import a Python file (once per process), as spaCy's ``--code`` does."""
    if not code:
        return
    path = Path(code)
    name = "spacy_rhetoric_user_code_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    if name in sys.modules:
        return
    if not path.is_file():
        raise CorpusBuildError(f"--code file {path} does not exist or is not a file")
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def check_build_dir(out_dir: Path, names: Sequence[str], force: bool = False) -> None:
    """Refuse an output directory that holds files a job writes (``names``)
    that no job wrote (no ``build_config.json`` beside them), unless
    ``force``: they are somebody else's."""
    if force or (out_dir / CONFIG_FILE).is_file():
        return
    foreign = [name for name in names if (out_dir / name).exists()]
    if foreign:
        raise CorpusBuildError(
            f"{out_dir} holds {', '.join(foreign)} that no build wrote (no {CONFIG_FILE}); refusing to overwrite "
            "them: choose another output directory or pass --force to replace them")


def lock_build(out_dir: Path):
    """The lock of a job's output folder (created): hold it for the whole
    run, so that a second run on the same folder stops at once
    (``io.OutputLockedError``) instead of writing beside the first."""
    return output_lock(Path(out_dir) / LOCK_FILE, f"output directory {out_dir}")


def remove_failed_build(out_dir: Path, created: bool) -> None:
    """A job that made ``out_dir`` and produced nothing leaves nothing
    behind (not a folder holding only ``build_config.json``)."""
    import shutil

    shard_dir = out_dir / SHARD_DIR
    if created and not (shard_dir.is_dir() and any(shard_dir.iterdir())):
        shutil.rmtree(out_dir, ignore_errors=True)


def prepare_output_dir(out_dir: Path, config: Dict[str, Any], overwrite: bool) -> Path:
    """Create ``out_dir/shards``, refuse to resume a job with other settings
    (unless ``overwrite``: its shards are removed), clean up temporary files of
    a killed run (in ``shards``; those of dead runs beside the outputs) and
    record ``config``. Call it holding :func:`lock_build`. Returns the shard
    directory."""
    path = out_dir / CONFIG_FILE
    shard_dir = out_dir / SHARD_DIR
    if overwrite and shard_dir.exists():
        for p in shard_dir.iterdir():
            p.unlink()
    elif path.exists():
        old = srsly.read_json(path)
        if old != config:
            diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
            raise CorpusBuildError(
                f"{out_dir} holds a build with different settings ({', '.join(diff)}); "
                "use another output directory or overwrite=True (--overwrite) to start afresh"
            )
    shard_dir.mkdir(parents=True, exist_ok=True)
    for p in shard_dir.glob(".tmp-*"):  # leftovers of a killed run (the caller holds lock_build)
        p.unlink()
    remove_stale_temps(out_dir)  # e.g. .tmp-annotations.jsonl.PID of a run killed while merging
    atomic_write_json(path, config)
    return shard_dir
