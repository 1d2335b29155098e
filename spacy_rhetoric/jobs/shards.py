"""Shard files: ``shards/<stem>-<key hash>-<content hash>.jsonl``, a header
line with the input's counts, then one line per record. A shard is the
done-marker of its input (the content hash in its name makes an edited
input a new unit of work); it is written to a temporary file and renamed
into place, and replaces the shards of earlier versions of the same input.
A shard may have a companion DocBin (``<shard name>.spacy``, ``annotate
--spacy``), written before the shard itself.

The shard folder is listed once when a run starts (:func:`earlier_shards`),
never once per input: writing a shard costs the same whether the folder
holds ten shards or a hundred thousand."""
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..io import atomic_path, atomic_write_lines
from .inputs import InputFile

SHARD_SUFFIXES = (".jsonl", ".spacy")


def shard_path(shard_dir: Path, inp: InputFile) -> Path:
    return shard_dir / inp.shard_name


def shard_docs_path(shard_dir: Path, inp: InputFile) -> Path:
    """The companion DocBin of an input's shard."""
    return shard_path(shard_dir, inp).with_suffix(".spacy")


def earlier_shards(shard_dir: Path) -> Dict[str, List[Path]]:
    """The shards (and companion DocBins) in ``shard_dir`` by the shard
    prefix of their input (``InputFile.shard_prefix``), from one listing
    of the folder: what :func:`write_shard` replaces."""
    found: Dict[str, List[Path]] = {}
    try:
        with os.scandir(shard_dir) as it:
            names = [entry.name for entry in it]
    except FileNotFoundError:
        return found
    for name in names:
        stem, dot, suffix = name.rpartition(".")
        if name.startswith(".") or not dot or f".{suffix}" not in SHARD_SUFFIXES or "-" not in stem:
            continue
        found.setdefault(stem.rpartition("-")[0] + "-", []).append(shard_dir / name)
    return found


def write_shard(shard_dir: Path, inp: InputFile, header: Dict[str, Any], records: List[Dict[str, Any]],
                docs: Optional[bytes] = None, *, earlier: Optional[Iterable[Path]] = None) -> Path:
    """Write an input's shard (and first its companion DocBin ``docs``, given
    as ``DocBin.to_bytes()``); remove the shards of earlier versions of the
    input: ``earlier``, the input's entry of :func:`earlier_shards` taken
    when the run started (None: the folder is listed now, which a run over
    many inputs should not do once per input)."""
    path = shard_path(shard_dir, inp)
    keep = {path}
    if docs is not None:
        keep.add(shard_docs_path(shard_dir, inp))
        with atomic_path(shard_docs_path(shard_dir, inp)) as tmp:
            tmp.write_bytes(docs)
    atomic_write_lines(path, [header] + [dict(r, input=inp.key) for r in records])
    if earlier is None:
        earlier = earlier_shards(shard_dir).get(inp.shard_prefix, ())
    for stale in earlier:  # earlier versions of the input
        if stale not in keep:
            try:
                stale.unlink()
            except FileNotFoundError:
                pass
    return path


def read_shard(path: Path) -> Tuple[Dict[str, Any], Iterator[Dict[str, Any]]]:
    """The header and a lazy iterator over the records of a shard."""
    fh = path.open(encoding="utf8")
    header = json.loads(fh.readline())

    def records():
        with fh:
            for line in fh:
                yield json.loads(line)

    return header, records()


def read_shard_header(path: Path) -> Dict[str, Any]:
    with path.open(encoding="utf8") as fh:
        return json.loads(fh.readline())
