"""The inputs of a job: the files a run reads, each with a stable key (its
order and shard name) and a fingerprint of its content (so an edited input
gets a new shard instead of reusing the stale one). The files a job writes
(shards, outputs, summary, config) are never inputs found in a directory,
so ``label DIR -o DIR/out`` run twice reads the same inputs.

No input can block or stop a run: a folder is walked following symbolic
links at most once per real directory (a link back up the tree, or two links
to one folder, are walked once); a FIFO, device or socket is never opened,
and a file that cannot be opened (permissions, a dangling or looping link)
is skipped and counted, like a file of a bad format."""
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from ..io import mode_kind, path_text, special_kind
from ..readers.label_inputs import SUFFIXES, input_kind
from .common import CorpusBuildError
from .settings import CONFIG_FILE, JOB_FILES, SHARD_DIR


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
    """sha1 of a regular file's bytes. The file is opened without blocking
    and read only if it is a regular file: a FIFO (whose ``open`` would wait
    for a writer), device or socket is an ``OSError`` saying what it is."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        kind = mode_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise OSError(f"{kind}, not a regular file")
        h = hashlib.sha1()
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _clscisumm_reference_xmls(root: Path) -> List[Path]:
    """Reference XMLs of every CL-SciSumm topic under ``root``."""
    from ..readers.clscisumm import iter_topics

    return sorted(Path(t.reference_xml) for t in iter_topics(root))


def _dir_key(path: Path) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def walk_files(root: Path) -> List[Path]:
    """Every entry below ``root`` that is not a directory (regular files,
    special files, dangling links; sorted), following symbolic links to
    directories at most once per real directory (``st_dev``, ``st_ino``):
    the folders below ``root`` are walked first, then the linked ones not
    seen yet, in path order. A link back up the tree adds nothing, two links
    to one folder add it once (under the first), and a folder reached both
    directly and through a link keeps its own path. (The project's offline
    asset mirror links the corpus directories.)"""
    seen: Set[Tuple[int, int]] = set()
    files: List[Path] = []
    links: List[Path] = []

    def walk(top: Path) -> None:  # without following links; they are queued
        stack = [top]
        while stack:
            folder = stack.pop()
            key = _dir_key(folder)
            if key is None or key in seen:
                continue
            seen.add(key)
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:  # unreadable folder: nothing below it
                continue
            for entry in reversed(entries):
                path = folder / entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(path)
                    elif entry.is_symlink() and entry.is_dir():
                        links.append(path)
                    else:
                        files.append(path)
                except OSError:  # e.g. a link looping on itself: skipped and counted when read
                    files.append(path)

    walk(root)
    while links:
        links.sort()
        walk(links.pop(0))
    return sorted(files)


def _real(path: Path) -> Path:
    """The path with every link resolved; never an error (a looping link
    stays as far as it resolves)."""
    return Path(os.path.realpath(path))


def build_dir_of(path: Path) -> Optional[Path]:
    """The output directory of the job that wrote ``path`` (a shard, an
    output, the summary or config, or a temporary file of one of them in a
    directory holding ``build_config.json``), else None."""
    parent = path.parent
    if parent.name == SHARD_DIR and (parent.parent / CONFIG_FILE).is_file():
        return parent.parent
    if (path.name in JOB_FILES or path.name.startswith(".tmp-")) and (parent / CONFIG_FILE).is_file():
        return parent
    return None


def _own_output(path: Path, out_dirs: Sequence[Path]) -> bool:
    real = _real(path)
    for out in out_dirs:
        if real.parent == out and (real.name in JOB_FILES or real.name.startswith(".tmp-")):
            return True
        if real.parent == out / SHARD_DIR:
            return True
    return False


def fingerprint_or_reason(path: Path) -> Tuple[Optional[str], str]:
    """``(None, fingerprint)`` of a readable input, else ``(reason, "")``:
    why it cannot be read (a FIFO, device or socket, never opened; a file
    that cannot be opened)."""
    kind = special_kind(path)
    if kind is not None:
        return f"{path_text(path)} is {kind}, not a regular file: never read", ""
    try:
        return None, file_fingerprint(path)
    except OSError as err:
        return f"{path_text(path)}: cannot be read ({err.strerror or err})", ""


def _items_of(arg: Path, excluded: Sequence[Path], kind_of: Callable[[Path], Optional[str]], expected: str,
              skip_hidden: bool) -> List[Tuple[str, Path]]:
    """``(key, path)`` of the inputs one argument names."""
    if arg.is_dir():
        below = [p for p in walk_files(arg) if build_dir_of(p) is None and not _own_output(p, excluded)
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
        return items
    if arg.is_file() or special_kind(arg) is not None:  # a special file: skipped and counted, never opened
        if not kind_of(arg):
            raise CorpusBuildError(f"{arg}: unsupported input type (expected one of {expected})")
        if _own_output(arg, excluded):
            raise CorpusBuildError(
                f"{arg}: input is an output of this build (in {arg.parent}); "
                "a build never reads its own outputs: copy it elsewhere or use another --output"
            )
        return [(path_text(arg.name), arg)]
    raise CorpusBuildError(f"{arg}: no such file or directory")


def discover_inputs(
    paths: Sequence[Union[str, Path]],
    *,
    limit: int = 0,
    exclude: Sequence[Union[str, Path]] = (),
    kind_of: Callable[[Path], Optional[str]] = input_kind,
    expected: str = ", ".join(SUFFIXES),
    skip_hidden: bool = False,
    skipped: Optional[List[Dict[str, str]]] = None,
) -> List[InputFile]:
    """Expand the given files/directories into input files, sorted by key.

    A directory that holds CL-SciSumm topics (``*/Reference_XML/*.xml``)
    contributes its reference papers only (citing papers and annotations are
    not part of the distant set); any other directory contributes every file
    below it (:func:`walk_files`) that ``kind_of`` accepts. Keys are paths
    relative to the directory given (file name for a file argument; a name
    that is not UTF-8 with its odd bytes escaped, ``io.path_text``). Inside
    a directory, the files of any job (``build_dir_of``) are left out; a
    file argument that is an output of a build to ``exclude`` (the build
    being started) is an error. ``limit``: the first N inputs by key
    (0 = all); only those are fingerprinted. ``kind_of(path)``: an input's
    kind, None for a file that is not an input (default: label's suffixes,
    ``expected`` describes them in errors); ``skip_hidden``: leave out files
    with a hidden part below a directory argument. An input that cannot be
    read (:func:`fingerprint_or_reason`) is left out and recorded in ``skipped``
    (``{"input": key, "reason": ...}``, the summary's list) when given.
    """
    excluded = [_real(Path(d)) for d in exclude]
    found: Dict[str, InputFile] = {}
    for arg in map(Path, paths):
        for key, path in _items_of(arg, excluded, kind_of, expected, skip_hidden):
            if key in found and _real(found[key].path) != _real(path):
                raise CorpusBuildError(
                    f"two inputs have the same key {key!r}: {found[key].path} and {path}; "
                    "pass their common parent directory instead"
                )
            found[key] = InputFile(key=key, path=path, kind=kind_of(path))
    inputs = [found[k] for k in sorted(found)]
    if limit and limit > 0:
        inputs = inputs[:limit]
    usable = []
    for inp in inputs:
        reason, fingerprint = fingerprint_or_reason(inp.path)
        if reason is None:
            usable.append(InputFile(inp.key, inp.path, inp.kind, fingerprint))
        elif skipped is not None:
            skipped.append({"input": inp.key, "reason": reason})
    return usable
