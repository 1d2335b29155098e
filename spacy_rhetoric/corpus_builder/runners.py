"""Label's runs on the project's job runner (``spacy_rhetoric.jobs``): the
read, process and finish steps of ``spacy-rhetoric label``, on this machine
(:func:`run_local`: one ordered ``nlp.pipe`` stream, ``n_process`` workers)
or by a Dask scheduler (:func:`run_dask`: one task per input). Each input's
shard is written as soon as the input is complete."""
import time
from functools import partial
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language

from ..io import path_text
from ..jobs import dask_tasks, record_skip, stream_inputs
from ..jobs.inputs import InputFile
from ..jobs.settings import OnShard
from ..jobs.shards import earlier_shards, write_shard
from ..readers.label_inputs import ReadResult, read_input
from .labeling import build_nlp, label_sentences, labeled_record
from .settings import LabelSettings, PhrasePairs

RunResult = Tuple[int, int, float]


def shard_header(inp: InputFile, read: ReadResult, n_sentences: int, n_words: int,
                 n_labeled: int) -> Dict[str, Any]:
    """The header line of a label shard: the input's counts."""
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


def _read(inp: InputFile, skipped: List[Dict[str, str]], progress: Any) -> Optional[ReadResult]:
    read = read_input(inp.path, inp.kind)
    if read.skipped_reason is not None:
        record_skip(skipped, inp.key, read.skipped_reason, progress)
        return None
    return read


def _label_finish(shard_dir: Path, done: List[int], on_shard: OnShard, progress: Any):
    """Write an input's shard from its labeled records and count it (the
    shard folder listed once, here: ``jobs.shards.earlier_shards``)."""
    earlier = earlier_shards(shard_dir)

    def finish(inp: InputFile, read: ReadResult, result: Tuple[List[Dict[str, Any]], int, int]) -> None:
        records, n_sentences, n_words = result
        header = shard_header(inp, read, n_sentences, n_words, len(records))
        write_shard(shard_dir, inp, header, records, earlier=earlier.get(inp.shard_prefix, ()))
        done[0] += 1
        done[1] += n_words
        progress.update(1)
        if on_shard is not None:
            on_shard(inp, header)

    return finish


def run_local(
    nlp: Language,
    pending: Sequence[InputFile],
    shard_dir: Path,
    skipped: List[Dict[str, str]],
    *,
    n_process: int,
    batch_size: int,
    on_shard: OnShard,
    progress: Any,
) -> RunResult:
    """Label on this machine: one ordered ``nlp.pipe`` stream over the
    sentences of all pending inputs (``jobs.stream_inputs``). The time includes
    reading inputs, starting ``n_process`` workers and writing shards, not
    loading the model. Returns (inputs labeled, words, seconds)."""
    done = [0, 0]
    finish = _label_finish(shard_dir, done, on_shard, progress)
    start = time.perf_counter()

    def read(inp: InputFile):
        result = _read(inp, skipped, progress)
        if result is None:
            return None
        return result, [(s["text"], s) for s in result.sentences if s["text"]]

    def finish_labeled(inp: InputFile, result: ReadResult, labeled: List[Tuple[Any, int]]) -> None:
        records = [rec for rec, _ in labeled if rec is not None]
        finish(inp, result, (records, len(labeled), sum(words for _, words in labeled)))

    stream_inputs(nlp, pending, read=read, process=labeled_record, finish=finish_labeled,
                  n_process=n_process, batch_size=batch_size)
    return done[0], done[1], time.perf_counter() - start


def run_dask(
    scheduler: str,
    workers: int,
    settings: LabelSettings,
    phrases: PhrasePairs,
    pending: Sequence[InputFile],
    shard_dir: Path,
    skipped: List[Dict[str, str]],
    *,
    batch_size: int,
    on_shard: OnShard,
    progress: Any,
) -> RunResult:
    """Label with Dask (``jobs.dask_tasks``): workers build the pipeline from
    the settings and the phrase list (sent once, as computed futures) and
    only label sentence lists."""
    done = [0, 0]
    seconds = dask_tasks(
        scheduler, workers, pending,
        pipeline=(build_nlp, (settings, list(phrases))),
        read=lambda inp: _read(inp, skipped, progress),
        work=partial(label_sentences, batch_size=batch_size),
        work_args=lambda inp, read: (read.sentences,),
        finish=_label_finish(shard_dir, done, on_shard, progress),
        name="label",
    )
    return done[0], done[1], seconds
