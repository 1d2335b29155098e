"""What determines a build: file names in the output directory, the labeling
settings, the phrase list, and the recorded ``build_config.json`` a resumed
build must match."""
import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import srsly

from ..errors import RhetoricError
from ..io import atomic_write_json, output_lock, remove_stale_temps
from ..util import DEFAULT_PARSER

SHARD_DIR = "shards"
CONFIG_FILE = "build_config.json"
SUMMARY_FILE = "summary.json"
OUTPUT_NAMES = ("train", "valid")
# Held (``io.output_lock``) by the run that writes the folder, removed when it ends.
LOCK_FILE = ".lock"
# The outputs of ``spacy-rhetoric annotate`` (``spacy_rhetoric.apps.annotate``), in the same layout.
ANNOTATION_FILES = ("annotations.jsonl", "annotations.spacy")
# Components of the English pipeline the labeler does not need (lemmas come
# from tagger + attribute_ruler + lemmatizer, the root from the parser).
DEFAULT_EXCLUDE = ("ner",)
PhrasePairs = List[Tuple[str, str]]


class CorpusBuildError(RhetoricError):
    """A build cannot start or finish (bad arguments, incompatible resume)."""


@dataclass(frozen=True)
class LabelSettings:
    """Everything that determines the labels (recorded in build_config.json)."""

    parser: str = DEFAULT_PARSER
    n: int = 5
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    code: Optional[str] = None  # a Python file to import first (custom functions), like spaCy's --code
    # Phrase segments shorter than n tokens are kept whole when they have at least
    # min_phrase_length tokens; None = n, i.e. only full n-grams (the paper's setting: shorter
    # n-grams "tend to be too generic to convey a specific communicative function").
    min_phrase_length: Optional[int] = None


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


def read_phrase_list(phrases: Union[str, Path, Sequence[Tuple[str, str]]]) -> Tuple[PhrasePairs, int]:
    """``(label, phrase)`` pairs and the number of skipped lines."""
    if isinstance(phrases, (str, Path)):
        from ..readers.phrases import read_phrases

        pairs, n_skipped = read_phrases(phrases)
        return [(str(a), str(b)) for a, b in pairs], int(n_skipped)
    return [(str(a), str(b)) for a, b in phrases], 0


def phrases_digest(pairs: PhrasePairs) -> str:
    h = hashlib.sha1()
    for label, phrase in pairs:
        h.update(f"{label}\t{phrase}\n".encode("utf8"))
    return h.hexdigest()


def check_build_dir(out_dir: Path, names: Sequence[str], force: bool = False) -> None:
    """Refuse an output directory that holds files a build writes (``names``)
    that no build wrote (no ``build_config.json`` beside them), unless
    ``force``: they are somebody else's."""
    if force or (out_dir / CONFIG_FILE).is_file():
        return
    foreign = [name for name in names if (out_dir / name).exists()]
    if foreign:
        raise CorpusBuildError(
            f"{out_dir} holds {', '.join(foreign)} that no build wrote (no {CONFIG_FILE}); refusing to overwrite "
            "them: choose another output directory or pass --force to replace them")


def lock_build(out_dir: Path):
    """The lock of a build's output folder (created): hold it for the whole
    run, so that a second run on the same folder stops at once
    (``io.OutputLockedError``) instead of writing beside the first."""
    return output_lock(Path(out_dir) / LOCK_FILE, f"output directory {out_dir}")


def remove_failed_build(out_dir: Path, created: bool) -> None:
    """A build that made ``out_dir`` and produced nothing leaves nothing
    behind (not a folder holding only ``build_config.json``)."""
    import shutil

    shard_dir = out_dir / SHARD_DIR
    if created and not (shard_dir.is_dir() and any(shard_dir.iterdir())):
        shutil.rmtree(out_dir, ignore_errors=True)


def prepare_output_dir(out_dir: Path, config: Dict[str, Any], overwrite: bool) -> Path:
    """Create ``out_dir/shards``, refuse to resume a build with other settings
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
