"""Safe file handling shared by every command and library writer.

One place for the rules the project keeps with user files:

- inputs are checked before any work starts (exists, file or directory as
  expected, never a device, FIFO or socket: ``special_kind``), with an error
  that names the path;
- outputs are checked before any work starts too: never an input, never
  inside an input directory (a pipeline, a corpus folder; a build that
  leaves its own outputs out when it reads a folder may say so with
  ``inside_ok``), never two outputs on one path, never an existing directory
  where a file goes, never anything that exists and is not a regular file or
  directory (a device such as ``/dev/null``, a FIFO, a socket: the rename
  below would replace it), never an existing file that is not of the kind
  the command writes (``kind``: a ``.spacy`` DocBin, JSON, HTML, PNG, ...;
  a user's paper or config at the output path) unless ``force``
  (``--force``), and a parent directory that can be created and written;
- every output is written to a temporary file beside it and renamed into place
  when complete (``atomic_path``), so an interrupted run never leaves a
  half-written file under the real name and never destroys the previous one;
  the temporary files of a run that was killed (``.tmp-NAME.PID``, ``.old-NAME.PID``
  whose process is gone) are removed by the next one (``remove_stale_temps``,
  called where a command starts: ``prepare_outputs``, a build's output folder,
  an index), never on every write (a folder of many shards is not rescanned);
- a full disk is one line naming the file being written (``DiskFullError``,
  ``disk_full``), not a traceback;
- two runs never write one output at once: a build takes ``output_lock`` on
  its output (a non-blocking ``flock``) and the second run is told another
  holds it (``OutputLockedError``);
- a file name that is not valid UTF-8 is written as text with its odd bytes
  escaped (``path_text``).

Errors are ``PathError`` (a ``ValueError``); the CLI turns them into one
``msg.fail`` line and exit code 1 (``spacy_rhetoric.cli.common``).
"""
import errno
import fcntl
import json
import os
import re
import shutil
import sqlite3
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from .errors import RhetoricError

PathLike = Union[str, Path]


class PathError(RhetoricError):
    """An input or output path that cannot be used; the message names it."""


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def mode_kind(mode: int) -> Optional[str]:
    """What a file of ``st_mode`` ``mode`` is when it is neither a regular
    file nor a directory ("a FIFO", "a socket", ...), else None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def special_kind(path: PathLike) -> Optional[str]:
    """What ``path`` is when it exists and is neither a regular file nor a
    directory (symbolic links followed): a device, FIFO or socket, which
    opening could block on or reading never end; else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return mode_kind(mode)


def check_not_special(path: PathLike, what: str = "output") -> None:
    """Refuse to write to a path that exists and is not a regular file or
    directory: writing there (temporary file + rename) would replace a
    device or FIFO with a regular file."""
    kind = special_kind(path)
    if kind is not None:
        raise PathError(f"{what} {path} is {kind}, not a regular file or directory; refusing to replace it")


# What the start of a file each writer writes looks like (an empty file is anyone's).
OUTPUT_KINDS = {
    "spacy": lambda head: head[:1] == b"\x78",  # DocBin.to_bytes: zlib
    "json": lambda head: head.lstrip()[:1] in (b"{", b"["),
    "jsonl": lambda head: head.lstrip()[:1] == b"{",
    "html": lambda head: head.lstrip().lower().startswith(b"<!doctype html"),
    "png": lambda head: head.startswith(b"\x89PNG"),
    "word2vec": lambda head: re.match(rb"\d+ \d+\s*\n", head) is not None,
}


def check_overwrite(path: PathLike, kind: Optional[str], *, what: str = "output", force: bool = False) -> None:
    """Refuse to replace an existing file that does not look like a ``kind``
    file (:data:`OUTPUT_KINDS`), i.e. that this command did not write,
    unless ``force``. ``kind=None``: no check."""
    p = Path(path)
    if force or kind is None or not p.is_file():
        return
    try:
        with p.open("rb") as fh:
            head = fh.read(256)
    except OSError:
        return
    if head and not OUTPUT_KINDS[kind](head):
        raise PathError(f"{what} {p} exists and is not a {kind} file as this command writes; refusing to "
                        "overwrite it (choose another path, or pass --force to replace it)")


def _inside(path: Path, folder: Path) -> bool:
    try:
        return folder.is_dir() and folder.resolve() in path.resolve().parents
    except OSError:
        return False


def check_input(path: PathLike, *, what: str = "input", file_ok: bool = True,
                dir_ok: bool = False) -> Path:
    """Return ``path`` as a Path if it exists and has the expected kind."""
    p = Path(path)
    if not p.exists():
        raise PathError(f"{what} not found: {p}")
    kind = special_kind(p)
    if kind is not None:  # opening a FIFO blocks until a writer comes; a device never ends
        raise PathError(f"{what} {p} is {kind}, not a regular file or directory; it is never read")
    if p.is_dir() and not dir_ok:
        raise PathError(f"{what} is a directory, expected a file: {p}")
    if p.is_file() and not file_ok:
        raise PathError(f"{what} is a file, expected a directory: {p}")
    if p.is_file() and not os.access(p, os.R_OK):
        raise PathError(f"{what} is not readable: {p}")
    return p


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output(path: PathLike, *, what: str = "output", inputs: Sequence[PathLike] = (),
                 dir_ok: bool = False, inside_ok: Sequence[PathLike] = (), kind: Optional[str] = None,
                 force: bool = False) -> Path:
    """Check that ``path`` can be written without touching any of ``inputs``.

    ``dir_ok``: the output is a directory (it may exist; it must not be a file).
    ``kind``: what the command writes there (:func:`check_overwrite`).
    An output inside an input directory is refused, but for the directories
    of ``inside_ok`` (corpus folders of a build that never reads its own
    outputs back).
    """
    p = Path(path)
    check_not_special(p, what)
    allowed = [Path(d) for d in inside_ok]
    for inp in inputs:
        ip = Path(inp)
        if _same_file(p, ip):
            raise PathError(f"{what} {p} is the same path as the input {ip}; choose another path")
        if _inside(p, ip) and not any(_same_file(ip, d) for d in allowed):
            raise PathError(f"{what} {p} is inside the input {ip}; writing there would change an input, "
                            "choose another path")
    if p.exists():
        if p.is_dir() and not dir_ok:
            raise PathError(f"{what} {p} is an existing directory, expected a file path")
        if p.is_file() and dir_ok:
            raise PathError(f"{what} {p} is an existing file, expected a directory")
    anchor = _nearest_existing(p if dir_ok else p.parent)
    if not anchor.is_dir():
        raise PathError(f"cannot create {what} {p}: {anchor} is not a directory")
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise PathError(f"cannot write {what} {p}: {anchor} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise PathError(f"cannot write {what} {p}: permission denied")
    check_overwrite(p, kind, what=what, force=force)
    return p


def check_outputs(outputs: Mapping[str, Optional[PathLike]], *, inputs: Sequence[PathLike] = (),
                  kinds: Optional[Mapping[str, str]] = None, force: bool = False) -> None:
    """``check_output`` for several named outputs, and no two on one path.

    ``outputs`` maps a name used in messages ("train output") to a path; None
    values (optional outputs not asked for) are left out. ``kinds``: the
    ``kind`` of each name (:func:`check_overwrite`).
    """
    seen = {}
    for what, path in outputs.items():
        if path is None:
            continue
        p = check_output(path, what=what, inputs=inputs, kind=(kinds or {}).get(what), force=force)
        for other_what, other in seen.items():
            if _same_file(p, other):
                raise PathError(f"{what} and {other_what} are the same path: {p}")
        seen[what] = p


def prepare_outputs(outputs: Mapping[str, Optional[PathLike]]) -> None:
    """Create the parent directory of each output and write (and remove) a
    probe file there, so that an output which cannot be written fails before
    the work starts: ``check_output`` reads permission bits, which root
    bypasses and which say nothing about e.g. ``/proc``. The temporary files
    of each output that killed runs left are removed (``remove_stale_temps``).
    Call it after ``check_outputs``; None values are left out."""
    for what, path in outputs.items():
        if path is None:
            continue
        parent = Path(path).parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=parent):
                pass
        except OSError as err:
            raise PathError(f"cannot write {what} {path}: {err.strerror or err}") from err
        remove_stale_temps(parent, Path(path).name)


class DiskFullError(PathError):
    """The disk (or quota) is full while an output is written."""


class OutputLockedError(PathError):
    """Another run is writing the same output."""


def path_text(path: PathLike) -> str:
    """``path`` as text that can go anywhere text goes (UTF-8 files, JSON,
    SQLite, msgpack, a terminal): the bytes of a file name that is not valid
    UTF-8, which Python keeps as lone surrogates, become ``\\xNN`` escapes
    (``caf\\xe9.txt``); any other name is unchanged."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def _is_disk_full(err: BaseException) -> bool:
    if isinstance(err, OSError):
        return err.errno in _NO_SPACE
    if isinstance(err, sqlite3.Error):  # SQLITE_FULL
        return getattr(err, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(err)
    if isinstance(err, RuntimeError):  # faiss' write errors carry the C library's text
        return "No space left on device" in str(err)
    return False


@contextmanager
def disk_full(path: Optional[PathLike] = None) -> Iterator[None]:
    """Turn a full disk while writing ``path`` (ENOSPC / EDQUOT, SQLite's
    "database or disk is full", faiss' write error) into a one-line
    :class:`DiskFullError` naming the file (the error's own file name first);
    every other error passes unchanged."""
    try:
        yield
    except (OSError, sqlite3.Error, RuntimeError) as err:
        if not _is_disk_full(err):
            raise
        where = (getattr(err, "filename", None) if isinstance(err, OSError) else None) or path
        raise DiskFullError("no space left on device" + (f" writing {path_text(where)}" if where else "")
                            + "; free some space and run the command again") from err


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody else's live process
        return True
    return True


_TEMP_NAME = re.compile(r"^\.(?:tmp|old)-(.+)\.(\d+)$")


def remove_stale_temps(folder: PathLike, name: Optional[str] = None) -> List[Path]:
    """Remove the temporary files and folders that a killed run left in
    ``folder`` (``.tmp-NAME.PID`` and ``.old-NAME.PID`` of :func:`atomic_path`
    and :func:`atomic_dir`, whose process PID is gone; those of a live run
    are kept). ``name``: only those of that output. Returns what was
    removed."""
    removed = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if not match or (name is not None and match.group(1) != name) or _pid_alive(int(match.group(2))):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except FileNotFoundError:
            continue
        removed.append(entry)
    return removed


@contextmanager
def output_lock(lock_file: PathLike, what: str) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (created, with its folder)
    for the block: a second run on the same output fails at once with
    :class:`OutputLockedError` naming ``what`` (the lock is ``flock``,
    non-blocking, released by the system when a run dies). The file holds
    the holder's pid and is removed when the block ends."""
    lock = Path(lock_file)
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip()
            os.close(fd)
            raise OutputLockedError(f"{what} is being written by another run"
                                    + (f" (pid {holder})" if holder.isdigit() else "")
                                    + f"; wait for it to finish (lock file {path_text(lock)})") from None
        try:  # the holder before may have removed the file between our open and our lock
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        try:  # the holder's pid, for the message of a second run (not needed: a full disk is fine)
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode("ascii"))
        except OSError:
            pass
        yield
    finally:
        try:
            lock.unlink()
        except FileNotFoundError:
            pass
        os.close(fd)


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".tmp-{path.name}.{os.getpid()}")


@contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` on success.

    On an exception the temporary file is removed and ``path`` is untouched;
    a full disk is a :class:`DiskFullError` naming ``path``. Parent
    directories are created. A ``path`` that is a device, FIFO or socket is
    never replaced (``PathError``, checked before and after the work).
    """
    p = Path(path)
    check_not_special(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_name(p)
    try:
        with disk_full(p):
            yield tmp
        check_not_special(p)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    os.replace(tmp, p)


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf8")


def atomic_write_json(path: PathLike, obj: Any, *, indent: int = 2) -> None:
    """Write ``obj`` as JSON to ``path`` atomically."""
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")


def atomic_write_lines(path: PathLike, lines: Iterable[Any]) -> None:
    """Write JSON lines to ``path`` atomically (fsynced before the rename)."""
    with atomic_path(path) as tmp:
        with tmp.open("w", encoding="utf8") as fh:
            for obj in lines:
                fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def extract_files(files: Any, root: PathLike, what: str = "archive") -> None:
    """Write ``{relative name: bytes}`` (a component's ``to_bytes`` archive)
    under the directory ``root``; a name that is not a relative path inside
    ``root`` (``../x``, ``/etc/x``) or data that is not bytes is a
    ValueError, and nothing is written outside ``root``."""
    if not isinstance(files, dict):
        raise RhetoricError(f"{what}: not a file archive")
    base = Path(root).resolve()
    for name, data in files.items():
        target = (base / str(name)).resolve()
        if base not in target.parents or not isinstance(data, bytes):
            raise RhetoricError(f"{what}: bad file name {name!r} in the archive")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


@contextmanager
def atomic_dir(path: PathLike) -> Iterator[Path]:
    """Yield a temporary directory path beside ``path``; on success it
    replaces ``path`` (an existing directory there is moved aside, then
    removed). On an exception the temporary directory is removed and ``path``
    is untouched. For whole directories such as ``nlp.to_disk`` output."""
    p = Path(path)
    check_not_special(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".tmp-{p.name}.{os.getpid()}")
    old = p.with_name(f".old-{p.name}.{os.getpid()}")
    try:
        with disk_full(p):
            yield tmp
        check_not_special(p)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if p.exists():
        os.replace(p, old)
    os.replace(tmp, p)
    shutil.rmtree(old, ignore_errors=True)
