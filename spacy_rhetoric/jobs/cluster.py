"""The pending inputs of a build as Dask tasks, one per input, all of one
shape (:func:`nlp_task`): the worker's pipeline, then the caller's work."""
import hashlib
import json
import logging
import time
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, is_dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Sized, Tuple

from spacy.language import Language

from .common import JobError
from .local import cpu_bound

# How a worker gets its pipeline: load(*args), module-level so that it pickles.
PipelineSpec = Tuple[Callable[..., Language], Tuple[Any, ...]]

# Worker-side cache: one pipeline per worker process (the last one asked for).
_WORKER_NLP: Dict[str, Language] = {}


def pipeline_key(load: Callable[..., Language], args: Tuple[Any, ...]) -> str:
    """What identifies a worker's pipeline: the load function and its
    arguments (dataclasses by their fields)."""
    values = [asdict(a) if is_dataclass(a) else a for a in args]
    text = f"{load.__module__}.{load.__qualname__}\0" + json.dumps(values, sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf8")).hexdigest()


def worker_nlp(load: Callable[..., Language], *args: Any) -> Language:
    """``load(*args)``, once per worker process (a new pipeline replaces the
    cached one)."""
    key = pipeline_key(load, args)
    if key not in _WORKER_NLP:
        _WORKER_NLP.clear()
        _WORKER_NLP[key] = load(*args)
    return _WORKER_NLP[key]


def nlp_task(load: Callable[..., Language], n_load_args: int, work: Callable[..., Any], *args: Any) -> Any:
    """The one task shape: ``work(nlp, *rest)`` with the worker's pipeline
    ``nlp = worker_nlp(load, *args[:n_load_args])``."""
    return work(worker_nlp(load, *args[:n_load_args]), *args[n_load_args:])


def load_on_gpu(gpu_id: int, load: Callable[..., Language], *args: Any) -> Language:
    """``load(*args)`` after ``spacy.require_gpu(gpu_id)``: a worker's
    pipeline on the GPU the client's runs on (module-level, so it pickles)."""
    import spacy

    spacy.require_gpu(gpu_id)
    return load(*args)


def on_device(pipeline: PipelineSpec, scheduler: str, workers: int) -> Tuple[PipelineSpec, int]:
    """The workers' pipeline and the LocalCluster's size for the device the
    client's pipelines run on (``util.pipeline_gpu``): unchanged on the CPU;
    on GPU N, every worker loads its pipeline on GPU N
    (:func:`load_on_gpu`) and a LocalCluster has one worker process (one
    line says so when more were asked for)."""
    from ..util import pipeline_gpu

    gpu_id = pipeline_gpu()
    if gpu_id < 0:
        return pipeline, workers
    if scheduler == "local" and workers > 1:
        from wasabi import msg

        msg.warn(f"--workers {workers}: the pipeline runs on GPU {gpu_id}, in one worker process: using 1")
        workers = 1
    load, args = pipeline
    return (load_on_gpu, (gpu_id, load, *args)), workers


def _warm(load: Callable[..., Language], *args: Any) -> bool:
    worker_nlp(load, *args)
    return True


def _identity(value: Any) -> Any:
    return value


def import_distributed():
    try:
        import distributed  # noqa: F401
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as err:
        raise JobError(
            "--scheduler needs Dask's distributed scheduler, which is not installed. "
            "Install the optional extra: pip install 'spacy_rhetoric[distributed]'"
        ) from err
    return Client, LocalCluster, as_completed


def bounded_workers(workers: int, n_items: Optional[int] = None) -> int:
    """``--workers`` of a LocalCluster bounded by the CPUs this process may
    use and by ``n_items`` (the inputs, when known), as ``--n-process`` is
    (``local.bounded_processes``), with a warning that says so: every worker
    process holds its own pipeline, so more workers than CPUs cost memory
    and gain nothing."""
    return cpu_bound(workers, "--workers", n_items)


def dask_client(scheduler: str, workers: int, n_items: Optional[int] = None):
    """A client of ``scheduler``; for ``"local"``, of a new LocalCluster of
    single-threaded worker processes (:func:`bounded_workers`) whose
    scheduler, workers and dashboard listen on 127.0.0.1 only."""
    Client, LocalCluster, _ = import_distributed()
    if scheduler == "local":
        cluster = LocalCluster(
            n_workers=bounded_workers(workers, n_items), threads_per_worker=1, processes=True,
            host="127.0.0.1", dashboard_address="127.0.0.1:0", preload=[__name__],  # dask_setup below
        )
        return Client(cluster), cluster
    return Client(scheduler), None


def dask_setup(worker: Any) -> None:
    """Run in every worker process of a LocalCluster as it starts (Dask's
    ``preload`` of this module): the worker ignores Ctrl-C, which a terminal
    sends to the whole process group; it is for the run, which then closes
    the cluster (a worker would only print a traceback). Its task state
    machine logs errors only: when the run is interrupted it cancels the
    running tasks, and each cancellation would be a WARNING line on the
    terminal after the one-line message."""
    import signal

    logging.getLogger("distributed.worker.state_machine").setLevel(logging.ERROR)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # pragma: no cover - not the worker's main thread
        pass


def dask_tasks(
    scheduler: str,
    workers: int,
    pending: Iterable[Any],
    *,
    pipeline: PipelineSpec,
    read: Callable[[Any], Any],
    work: Callable[..., Any],
    work_args: Callable[[Any, Any], Tuple[Any, ...]],
    finish: Callable[[Any, Any, Any], None],
    name: str = "task",
    task_key: Callable[[Any], str] = lambda inp: inp.shard_name,
) -> float:
    """One Dask task per pending input, at most ``2 x workers`` in flight.
    ``scheduler`` is ``"local"`` (a LocalCluster of ``workers`` single-threaded
    processes, at most one per CPU, on 127.0.0.1) or an address. The client reads the inputs (``read(input)``:
    a payload, or None when skipped) and finishes them (``finish(input,
    payload, task result)``: writes the shard), so workers need neither the
    corpus nor a shared file system. Every task is :func:`nlp_task`:
    ``work(nlp, *work_args(input, payload))`` with the worker's pipeline
    ``pipeline = (load, args)``, whose args are sent once as computed (not
    scattered) futures (if the worker holding one dies, the scheduler
    recomputes it instead of losing it); every worker loads the pipeline
    before the clock starts, on the GPU the client's pipelines use, if any
    (:func:`on_device`: then a LocalCluster has one worker). ``pending`` items are usually ``InputFile``
    (``task_key`` names a task after its input; the search index passes its
    own parts). Returns the seconds taken."""
    _, _, as_completed = import_distributed()
    pipeline, workers = on_device(pipeline, scheduler, workers)
    load, load_args = pipeline
    client, cluster = dask_client(scheduler, workers, len(pending) if isinstance(pending, Sized) else None)
    start: Optional[float] = None
    interrupted = False
    tornado_log = logging.getLogger("tornado.application")
    tornado_log.addFilter(interrupted_wait_filter)
    try:
        n_workers = max(1, len(client.scheduler_info().get("workers", {})) or workers)
        max_in_flight = 2 * n_workers
        stamp = time.time_ns()
        load_futures = [client.submit(_identity, value, key=f"spacy-rhetoric-{name}-pipeline-{i}-{stamp}")
                        for i, value in enumerate(load_args)]
        try:  # load the pipeline on every worker before the clock starts
            client.run(_warm, load, *load_args)
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
                    nlp_task, load, len(load_futures), work, *load_futures, *work_args(inp, payload),
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
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM (jobs.interrupts): the workers are stopped mid-task
        interrupted = True
        raise
    finally:
        seconds = time.perf_counter() - start if start is not None else 0.0
        with _quiet("distributed.nanny", "distributed.worker") if interrupted else nullcontext():
            client.close()
            if cluster is not None:
                cluster.close()
        tornado_log.removeFilter(interrupted_wait_filter)
    return seconds


def interrupted_wait_filter(record: "logging.LogRecord") -> bool:
    """Drop the traceback that distributed's ``sync`` logs through tornado
    when Ctrl-C or SIGTERM lands while the client waits on a result before
    the wait's own future exists (its cancel callback reads that future: a
    NameError); the interrupt itself is reported in one line."""
    error = record.exc_info[1] if record.exc_info else None
    return not (isinstance(error, NameError) and "'future'" in str(error))


@contextmanager
def _quiet(*loggers: str) -> Iterator[None]:
    """Only errors from ``loggers`` in the block (the nanny's warnings that
    a worker stopped mid-task had to be killed: what an interrupt does)."""

    levels = {name: logging.getLogger(name).level for name in loggers}
    for name in loggers:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
