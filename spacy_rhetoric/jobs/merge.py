"""The merge step of a job: its shards read back in input-key order (the
order of the inputs given, sorted by key), records in the order they were
written, so a resumed run ends with the output of an uninterrupted one.
Outputs are written atomically (``io.atomic_path``); a job reruns its merge
in full on every run."""
from itertools import chain
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Sequence

from ..io import atomic_path, atomic_write_lines
from .inputs import InputFile
from .shards import read_shard, shard_docs_path, shard_path


def shard_records(shard_dir: Path, inputs: Sequence[InputFile]) -> Iterator[Dict[str, Any]]:
    """The records of the inputs' shards, in the order of ``inputs``
    (sorted by key); an input without a shard adds nothing."""
    for inp in inputs:
        path = shard_path(shard_dir, inp)
        if path.exists():
            yield from read_shard(path)[1]


def concatenate_shards(shard_dir: Path, done_inputs: Sequence[InputFile], *, jsonl: Optional[Path] = None,
                       spacy: Optional[Path] = None) -> Dict[str, str]:
    """The shards of ``done_inputs`` in input-key order into one JSONL file
    (``jsonl``) and their companion DocBins into one ``.spacy`` file
    (``spacy``), each written atomically; returns ``{"jsonl": path,
    "spacy": path}`` of those written."""
    outputs = {}
    if jsonl is not None:
        atomic_write_lines(jsonl, chain.from_iterable(read_shard(shard_path(shard_dir, inp))[1]
                                                      for inp in done_inputs))
        outputs["jsonl"] = str(jsonl)
    if spacy is not None:
        from spacy.tokens import DocBin

        merged = DocBin(store_user_data=True)
        for inp in done_inputs:
            merged.merge(DocBin(store_user_data=True).from_disk(shard_docs_path(shard_dir, inp)))
        with atomic_path(spacy) as tmp:
            merged.to_disk(tmp)
        outputs["spacy"] = str(spacy)
    return outputs
