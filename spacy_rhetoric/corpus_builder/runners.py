"""Runners: the pending inputs of a build, processed on this machine (one
ordered ``nlp.pipe`` stream, ``n_process`` workers: :func:`stream_inputs`) or
by a Dask scheduler (one task per input: :func:`dask_tasks`). Both are
generic over what a build does with an input; ``label`` (:func:`run_local`,
:func:`run_dask`) and ``annotate`` (``spacy_rhetoric.apps.annotate``) give them
their read, process and finish steps. Each input's shard is written as soon
as the input is complete."""
import json
import time
import warnings
from collections import OrderedDict
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language

from ..readers.label_inputs import ReadResult, read_input
from .inputs import InputFile
from .labeling import build_nlp, label_sentences, labeled_record
from .settings import CorpusBuildError, LabelSettings, PhrasePairs, phrases_digest
from .shards import shard_header, write_shard

OnShard = Optional[Callable[[InputFile, Dict[str, Any]], None]]
RunResult = Tuple[int, int, float]
# read(input) -> (payload, [(text or Doc, context), ...]) for nlp.pipe, or None (skipped)
ReadItems = Callable[[InputFile], Optional[Tuple[Any, Iterable[Tuple[Any, Any]]]]]


def bounded_processes(n_process: int, n_items: Optional[int] = None) -> int:
    """``n_process`` bounded by the CPUs this process may use and by
    ``n_items`` (the units of work, when known), with a warning that says
    so: more processes than either only costs start-up time and memory (and
    open files: thousands end in "Too many open files")."""
    import os

    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    limit = max(1, min(cpus, n_items if n_items else cpus))
    if n_process > limit:
        from wasabi import msg

        what = f"{cpus} CPUs" + (f" and {n_items} inputs" if n_items else "")
        msg.warn(f"--n-process {n_process} is more than this run can use ({what}): using {limit}")
        return limit
    return n_process


def stream_inputs(
    nlp: Language,
    pending: Sequence[InputFile],
    *,
    read: ReadItems,
    process: Callable[[Any, Any], Any],
    finish: Callable[[InputFile, Any, List[Any]], None],
    n_process: int,
    batch_size: int,
    disable: Sequence[str] = (),
    max_processes: Optional[int] = None,
) -> None:
    """The items of all pending inputs through one ordered ``nlp.pipe(...,
    as_tuples=True)`` stream. ``read(input)`` gives the input's payload and
    items (None: skipped); ``process(doc, context)`` runs in this process on
    every doc out of the pipeline; ``finish(input, payload, results)`` is
    called, in input order, as soon as the input's last item is out, so
    memory is bounded by the inputs in flight. ``disable``: components left
    out (e.g. sentence splitters for Docs with preset boundaries).
    ``n_process`` is bounded by the CPUs and ``max_processes``
    (:func:`bounded_processes`)."""
    n_process = bounded_processes(n_process, max_processes)
    in_flight: "OrderedDict[str, Tuple[InputFile, Any, int, List[Any]]]" = OrderedDict()

    def feed() -> Iterator[Tuple[Any, Tuple[str, Any]]]:
        for inp in pending:
            got = read(inp)
            if got is None:
                continue
            payload, items = got
            items = list(items)
            in_flight[inp.key] = (inp, payload, len(items), [])
            for item, context in items:
                yield item, (inp.key, context)

    def flush_complete() -> None:
        while in_flight:
            inp, payload, expected, results = next(iter(in_flight.values()))
            if len(results) < expected:
                return
            in_flight.popitem(last=False)
            finish(inp, payload, results)

    with warnings.catch_warnings():
        # Worker processes (forked inside this block) send their docs back as
        # bytes without the encoder's sent.vector hooks and spaCy warns so
        # (W109); ``process`` reads extension values, not hooks.
        warnings.filterwarnings("ignore", message=r"\[W109\]")
        for doc, (key, context) in nlp.pipe(feed(), as_tuples=True, n_process=n_process, batch_size=batch_size,
                                            disable=list(disable)):
            in_flight[key][3].append(process(doc, context))
            flush_complete()
    flush_complete()
    if in_flight:  # pragma: no cover - would mean nlp.pipe dropped documents
        raise RuntimeError(f"inputs left incomplete: {list(in_flight)}")


def _read(inp: InputFile, skipped: List[Dict[str, str]], progress: Any) -> Optional[ReadResult]:
    read = read_input(inp.path, inp.kind)
    if read.skipped_reason is not None:
        skipped.append({"input": inp.key, "reason": read.skipped_reason})
        progress.update(1)
        return None
    return read


def _label_finish(shard_dir: Path, done: List[int], on_shard: OnShard, progress: Any):
    """Write an input's shard from its labeled records and count it."""

    def finish(inp: InputFile, read: ReadResult, result: Tuple[List[Dict[str, Any]], int, int]) -> None:
        records, n_sentences, n_words = result
        header = shard_header(inp, read, n_sentences, n_words, len(records))
        write_shard(shard_dir, inp, header, records)
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
    sentences of all pending inputs (:func:`stream_inputs`). The time includes
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


def dask_tasks(
    scheduler: str,
    workers: int,
    pending: Iterable[Any],
    *,
    read: Callable[[Any], Any],
    task: Callable[..., Any],
    task_args: Callable[[InputFile, Any, Dict[str, Any]], Tuple[Any, ...]],
    finish: Callable[[InputFile, Any, Any], None],
    warm: Optional[Tuple[Callable[..., Any], Tuple[Any, ...]]] = None,
    shared: Optional[Dict[str, Any]] = None,
    name: str = "task",
    task_key: Callable[[Any], str] = lambda inp: inp.shard_name,
) -> float:
    """One Dask task per pending input, at most ``2 x workers`` in flight.
    ``scheduler`` is ``"local"`` (a LocalCluster of ``workers`` single-threaded
    processes) or an address. The client reads the inputs (``read(input)``:
    a payload, or None when skipped) and finishes them (``finish(input,
    payload, task result)``: writes the shard), so workers need neither the
    corpus nor a shared file system. ``shared``: values every task needs,
    sent once as computed (not scattered) futures under the given keys (if
    the worker holding one dies, the scheduler recomputes it instead of
    losing it); ``task_args(input, payload, shared futures)`` gives a task's
    arguments. ``warm = (function, args)`` runs on every worker before the
    clock starts (loading the pipeline). ``pending`` items are usually
    :class:`InputFile` (``task_key`` names a task after its input; the search
    index passes its own parts). Returns the seconds taken."""
    Client, LocalCluster, as_completed = import_distributed()
    cluster = None
    if scheduler == "local":
        cluster = LocalCluster(
            n_workers=max(1, workers), threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        client = Client(cluster)
    else:
        client = Client(scheduler)
    start: Optional[float] = None
    try:
        n_workers = max(1, len(client.scheduler_info().get("workers", {})) or workers)
        max_in_flight = 2 * n_workers
        futures_shared = {key: client.submit(_identity, value, key=key) for key, value in (shared or {}).items()}
        if warm is not None:
            try:  # load the pipeline on every worker before the clock starts
                client.run(warm[0], *warm[1])
            except Exception as err:  # a worker lost meanwhile: tasks load it lazily
                warnings.warn(f"warming up the Dask workers failed ({err}); continuing")
        start = time.perf_counter()
        todo = iter(pending)
        futures = as_completed()
        meta: Dict[str, Tuple[Any, Any]] = {}

        def submit_next() -> bool:
            for inp in todo:
                payload = read(inp)
                if payload is None:
                    continue
                fut = client.submit(
                    task, *task_args(inp, payload, futures_shared),
                    pure=False, key=f"spacy-rhetoric-{name}-{task_key(inp)}-{time.time_ns()}",
                )
                meta[fut.key] = (inp, payload)
                futures.add(fut)
                return True
            return False

        for _ in range(max_in_flight):
            if not submit_next():
                break
        for fut in futures:
            result = fut.result()
            inp, payload = meta.pop(fut.key)
            finish(inp, payload, result)
            submit_next()
    finally:
        seconds = time.perf_counter() - start if start is not None else 0.0
        client.close()
        if cluster is not None:
            cluster.close()
    return seconds


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
    """Label with Dask (:func:`dask_tasks`): workers only label sentence
    lists; the phrase list travels as a computed future. Every worker loads
    the pipeline before the clock starts."""
    done = [0, 0]
    phrases_key = f"spacy-rhetoric-phrases-{phrases_digest(phrases)}"
    seconds = dask_tasks(
        scheduler, workers, pending,
        read=lambda inp: _read(inp, skipped, progress),
        task=dask_label_task,
        task_args=lambda inp, read, shared: (read.sentences, settings, shared[phrases_key], batch_size),
        finish=_label_finish(shard_dir, done, on_shard, progress),
        warm=(_warm_worker, (settings, list(phrases))),
        shared={phrases_key: list(phrases)},
        name="label",
    )
    return done[0], done[1], seconds
