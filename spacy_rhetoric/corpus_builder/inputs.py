"""Input discovery: the files a build labels, each with a stable key (its
order and shard name) and a fingerprint of its content (so an edited input
gets a new shard instead of reusing the stale one). The files a build writes
(shards, train/valid outputs, summary, config) are never inputs found in a
directory, so ``label DIR -o DIR/out`` run twice reads the same inputs.
``annotate`` finds its inputs here too (its own ``kind_of``)."""
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Union

from ..io import path_text
from ..readers.label_inputs import SUFFIXES, input_kind
from .settings import (
    ANNOTATION_FILES,
    CONFIG_FILE,
    LOCK_FILE,
    OUTPUT_NAMES,
    SHARD_DIR,
    SUMMARY_FILE,
    CorpusBuildError,
)

BUILD_FILES = frozenset([CONFIG_FILE, SUMMARY_FILE, LOCK_FILE, *ANNOTATION_FILES]
                        + [f"{name}.{ext}" for name in OUTPUT_NAMES for ext in ("jsonl", "spacy")])


@dataclass(frozen=True)
class InputFile:
    """One unit of work: a file, its stable key and its content fingerprint."""

    key: str
    path: Path
    kind: str  # "xml", "txt", "jsonl", "spacy" (label); a format name (annotate)
    fingerprint: str = ""  # sha1 of the file's bytes

    @property
    def shard_prefix(self) -> str:
        """Shared by every shard of this key, whatever the content."""
        digest = hashlib.sha1(self.key.encode("utf8")).hexdigest()[:12]
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(self.key).stem)[:60]
        return f"{stem}-{digest}-"

    @property
    def shard_name(self) -> str:
        return f"{self.shard_prefix}{self.fingerprint[:16]}.jsonl"


def file_fingerprint(path: Path) -> str:
    h = hashlib.sha1()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _clscisumm_reference_xmls(root: Path) -> List[Path]:
    """Reference XMLs of every CL-SciSumm topic under ``root``."""
    from ..readers.clscisumm import iter_topics

    return sorted(Path(t.reference_xml) for t in iter_topics(root))


def _walk_files(root: Path) -> List[Path]:
    """Every file below ``root``, following symlinked directories (the
    project's offline asset mirror links the corpus directories)."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        files.extend(Path(dirpath) / name for name in filenames)
    return sorted(files)


def build_dir_of(path: Path) -> Optional[Path]:
    """The output directory of the label build that wrote ``path`` (a shard,
    a train/valid output, the summary or config, or a temporary file of one of
    them in a directory holding ``build_config.json``), else None."""
    parent = path.parent
    if parent.name == SHARD_DIR and (parent.parent / CONFIG_FILE).is_file():
        return parent.parent
    if (path.name in BUILD_FILES or path.name.startswith(".tmp-")) and (parent / CONFIG_FILE).is_file():
        return parent
    return None


def _own_output(path: Path, out_dirs: Sequence[Path]) -> bool:
    real = path.resolve()
    for out in out_dirs:
        if real.parent == out and (real.name in BUILD_FILES or real.name.startswith(".tmp-")):
            return True
        if real.parent == out / SHARD_DIR:
            return True
    return False


def discover_inputs(
    paths: Sequence[Union[str, Path]],
    *,
    limit: int = 0,
    exclude: Sequence[Union[str, Path]] = (),
    kind_of: Callable[[Path], Optional[str]] = input_kind,
    expected: str = ", ".join(SUFFIXES),
    skip_hidden: bool = False,
) -> List[InputFile]:
    """Expand the given files/directories into input files, sorted by key.

    A directory that holds CL-SciSumm topics (``*/Reference_XML/*.xml``)
    contributes its reference papers only (citing papers and annotations are
    not part of the distant set); any other directory contributes every
    ``.xml``/``.txt``/``.jsonl``/``.spacy`` file below it. Keys are paths
    relative to the directory given (file name for a file argument; a name
    that is not UTF-8 with its odd bytes escaped, ``io.path_text``). Inside
    a directory, the files of any label build (``build_dir_of``) are left
    out; a file argument that is an output of a build to ``exclude`` (the
    build being started) is an error. ``limit``: the first N inputs by key
    (0 = all); only those are fingerprinted. ``kind_of(path)``: an input's
    kind, None for a file that is not an input (default: label's suffixes,
    ``expected`` describes them in errors); ``skip_hidden``: leave out files
    with a hidden part below a directory argument.
    """
    excluded = [Path(d).resolve() for d in exclude]
    found: Dict[str, InputFile] = {}
    for arg in paths:
        arg = Path(arg)
        if arg.is_dir():
            below = [p for p in _walk_files(arg) if build_dir_of(p) is None and not _own_output(p, excluded)
                     and not (skip_hidden and any(part.startswith(".") for part in p.relative_to(arg).parts))]
            if any(p.parent.name == "Reference_XML" and p.suffix == ".xml" for p in below):
                files = [p for p in _clscisumm_reference_xmls(arg) if build_dir_of(p) is None]
            else:
                files = [p for p in below if kind_of(p)]
            items = [(path_text(p.relative_to(arg).as_posix()), p) for p in files]
            if not items:
                raise CorpusBuildError(
                    f"{arg}: directory holds no input files ({expected} or "
                    "CL-SciSumm */Reference_XML/*.xml; the outputs of a label build are never inputs)"
                )
        elif arg.is_file():
            if not kind_of(arg):
                raise CorpusBuildError(f"{arg}: unsupported input type (expected one of {expected})")
            if _own_output(arg, excluded):
                raise CorpusBuildError(
                    f"{arg}: input is an output of this build (in {arg.parent}); "
                    "a build never reads its own outputs: copy it elsewhere or use another --output"
                )
            items = [(path_text(arg.name), arg)]
        else:
            raise CorpusBuildError(f"{arg}: no such file or directory")
        for key, path in items:
            if key in found and found[key].path.resolve() != path.resolve():
                raise CorpusBuildError(
                    f"two inputs have the same key {key!r}: {found[key].path} and {path}; "
                    "pass their common parent directory instead"
                )
            found[key] = InputFile(key=key, path=path, kind=kind_of(path))
    inputs = [found[k] for k in sorted(found)]
    if limit and limit > 0:
        inputs = inputs[:limit]
    return [InputFile(inp.key, inp.path, inp.kind, file_fingerprint(inp.path)) for inp in inputs]
