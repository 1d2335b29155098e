"""Labeling runners: the pending inputs of a build, labeled on this machine
(one ordered ``nlp.pipe`` stream, ``n_process`` workers) or by a Dask
scheduler (one task per input). Both write each input's shard as soon as it
is complete and return (inputs labeled, words, seconds)."""
import json
import time
import warnings
from collections import OrderedDict
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from ..readers.label_inputs import ReadResult, read_input
from .inputs import InputFile
from .labeling import build_nlp, label_sentences, labeled_record
from .settings import CorpusBuildError, LabelSettings, PhrasePairs, phrases_digest
from .shards import ShardBuffer, shard_header, write_shard

OnShard = Optional[Callable[[InputFile, Dict[str, Any]], None]]
RunResult = Tuple[int, int, float]


def _read(inp: InputFile, skipped: List[Dict[str, str]], progress: Any) -> Optional[ReadResult]:
    read = read_input(inp.path, inp.kind)
    if read.skipped_reason is not None:
        skipped.append({"input": inp.key, "reason": read.skipped_reason})
        progress.update(1)
        return None
    return read


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
    """One ordered ``nlp.pipe`` stream over all pending inputs; each input's
    shard is written as soon as its last sentence is out. The time includes
    reading inputs, starting ``n_process`` workers and writing shards, not
    loading the model."""
    in_flight: "OrderedDict[str, ShardBuffer]" = OrderedDict()
    done = [0, 0]
    start = time.perf_counter()

    def feed() -> Iterator[Tuple[str, Tuple[str, Dict[str, Any]]]]:
        for inp in pending:
            read = _read(inp, skipped, progress)
            if read is None:
                continue
            in_flight[inp.key] = ShardBuffer(inp, read)
            for s in read.sentences:
                if s["text"]:
                    yield s["text"], (inp.key, s)

    def flush_complete() -> None:
        while in_flight:
            shard = next(iter(in_flight.values()))
            if not shard.complete:
                return
            in_flight.popitem(last=False)
            header = shard.header()
            write_shard(shard_dir, shard.inp, header, shard.records)
            done[0] += 1
            done[1] += shard.n_words
            progress.update(1)
            if on_shard is not None:
                on_shard(shard.inp, header)

    doc: Doc
    for doc, (key, meta) in nlp.pipe(feed(), as_tuples=True, n_process=n_process, batch_size=batch_size):
        shard = in_flight[key]
        rec, words = labeled_record(doc, meta)
        shard.received += 1
        shard.n_words += words
        if rec is not None:
            shard.records.append(rec)
        flush_complete()
    flush_complete()
    if in_flight:  # pragma: no cover - would mean nlp.pipe dropped documents
        raise RuntimeError(f"inputs left incomplete: {list(in_flight)}")
    return done[0], done[1], time.perf_counter() - start


# Worker-side cache: one pipeline per (settings, phrases) per worker process.
_WORKER_NLP: Dict[str, Language] = {}


def _worker_nlp(settings: LabelSettings, phrases: PhrasePairs) -> Language:
    key = json.dumps(asdict(settings), sort_keys=True) + phrases_digest(phrases)
    if key not in _WORKER_NLP:
        _WORKER_NLP.clear()
        _WORKER_NLP[key] = build_nlp(settings, phrases)
    return _WORKER_NLP[key]


def _identity(value: Any) -> Any:
    return value


def _warm_worker(settings: LabelSettings, phrases: PhrasePairs) -> bool:
    _worker_nlp(settings, phrases)
    return True


def dask_label_task(sentences: List[Dict[str, Any]], settings: LabelSettings, phrases: PhrasePairs,
                    batch_size: int):
    """The per-input Dask task: label the sentences of one input."""
    nlp = _worker_nlp(settings, phrases)
    return label_sentences(nlp, sentences, batch_size=batch_size)


def import_distributed():
    try:
        import distributed  # noqa: F401
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as err:
        raise CorpusBuildError(
            "--scheduler needs Dask's distributed scheduler, which is not installed. "
            "Install the optional extra: pip install 'spacy_rhetoric[distributed]'"
        ) from err
    return Client, LocalCluster, as_completed


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
    """One Dask task per pending input, at most ``2 x workers`` in flight.
    ``scheduler`` is ``"local"`` (a LocalCluster of ``workers`` single-threaded
    processes) or an address. The client reads the inputs and writes the
    shards, so workers need neither the corpus nor a shared file system. Every
    worker loads the pipeline before the clock starts."""
    Client, LocalCluster, as_completed = import_distributed()
    cluster = None
    if scheduler == "local":
        cluster = LocalCluster(
            n_workers=max(1, workers), threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        client = Client(cluster)
    else:
        client = Client(scheduler)
    done = [0, 0]
    start: Optional[float] = None
    try:
        n_workers = max(1, len(client.scheduler_info().get("workers", {})) or workers)
        max_in_flight = 2 * n_workers
        # A computed (not scattered) future: if the worker holding it dies,
        # the scheduler recomputes it instead of losing it.
        phrases_future = client.submit(
            _identity, list(phrases), key=f"spacy-rhetoric-phrases-{phrases_digest(phrases)}"
        )
        try:  # load the pipeline on every worker before the clock starts
            client.run(_warm_worker, settings, list(phrases))
        except Exception as err:  # a worker lost meanwhile: tasks load it lazily
            warnings.warn(f"warming up the Dask workers failed ({err}); continuing")
        start = time.perf_counter()
        todo = iter(pending)
        futures = as_completed()
        meta: Dict[str, Tuple[InputFile, ReadResult]] = {}

        def submit_next() -> bool:
            for inp in todo:
                read = _read(inp, skipped, progress)
                if read is None:
                    continue
                fut = client.submit(
                    dask_label_task, read.sentences, settings, phrases_future, batch_size,
                    pure=False, key=f"spacy-rhetoric-label-{inp.shard_name}-{time.time_ns()}",
                )
                meta[fut.key] = (inp, read)
                futures.add(fut)
                return True
            return False

        for _ in range(max_in_flight):
            if not submit_next():
                break
        for fut in futures:
            records, n_sentences, n_words = fut.result()
            inp, read = meta.pop(fut.key)
            header = shard_header(inp, read, n_sentences, n_words, len(records))
            write_shard(shard_dir, inp, header, records)
            done[0] += 1
            done[1] += n_words
            progress.update(1)
            if on_shard is not None:
                on_shard(inp, header)
            submit_next()
    finally:
        seconds = time.perf_counter() - start if start is not None else 0.0
        client.close()
        if cluster is not None:
            cluster.close()
    return done[0], done[1], seconds
