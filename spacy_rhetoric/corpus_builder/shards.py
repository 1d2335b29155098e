"""Shard files: ``shards/<stem>-<key hash>-<content hash>.jsonl``, a header
line with the input's counts, then one line per labeled sentence. A shard is
the done-marker of its input (the content hash in its name makes an edited
input a new unit of work); it is written to a temporary file and renamed into
place, and replaces the shards of earlier versions of the same input. A
shard may have a companion DocBin (``<shard name>.spacy``, ``annotate
--spacy``), written before the shard itself."""
import json
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..io import atomic_path, atomic_write_lines, path_text
from ..readers.label_inputs import ReadResult
from .inputs import InputFile


def shard_header(inp: InputFile, read: ReadResult, n_sentences: int, n_words: int,
                 n_labeled: int) -> Dict[str, Any]:
    papers = sorted({s["paper_id"] for s in read.sentences})
    return {
        "input": inp.key,
        "path": path_text(inp.path),
        "sha1": inp.fingerprint,
        "papers": papers,
        "n_source_sentences": len(read.sentences) + read.n_empty,
        "n_sentences": n_sentences,
        "n_empty": len(read.sentences) - n_sentences + read.n_empty,
        "n_words": n_words,
        "n_labeled": n_labeled,
        "n_bad_records": read.n_bad_records,
        "bad_records": read.bad_records,
    }


def shard_path(shard_dir: Path, inp: InputFile) -> Path:
    return shard_dir / inp.shard_name


def shard_docs_path(shard_dir: Path, inp: InputFile) -> Path:
    """The companion DocBin of an input's shard."""
    return shard_path(shard_dir, inp).with_suffix(".spacy")


def write_shard(shard_dir: Path, inp: InputFile, header: Dict[str, Any],
                records: List[Dict[str, Any]], docs: Optional[bytes] = None) -> Path:
    """Write an input's shard (and first its companion DocBin ``docs``, given
    as ``DocBin.to_bytes()``); remove the shards of earlier versions."""
    path = shard_path(shard_dir, inp)
    keep = {path}
    if docs is not None:
        keep.add(shard_docs_path(shard_dir, inp))
        with atomic_path(shard_docs_path(shard_dir, inp)) as tmp:
            tmp.write_bytes(docs)
    atomic_write_lines(path, [header] + [dict(r, input=inp.key) for r in records])
    for stale in shard_dir.glob(f"{inp.shard_prefix}*"):  # earlier versions of the input
        if stale not in keep and stale.suffix in (".jsonl", ".spacy"):
            stale.unlink()
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
