"""The pending inputs of a build through one ordered ``nlp.pipe`` stream on
this machine (``n_process`` workers)."""
import os
import warnings
from collections import OrderedDict
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language

# read(input) -> (payload, [(text or Doc, context), ...]) for nlp.pipe, or None (skipped)
ReadItems = Callable[[Any], Optional[Tuple[Any, Iterable[Tuple[Any, Any]]]]]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else all)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def bounded_processes(n_process: int, n_items: Optional[int] = None) -> int:
    """``n_process`` bounded by the CPUs this process may use and by
    ``n_items`` (the units of work, when known), with a warning that says
    so: more processes than either only costs start-up time and memory (and
    open files: thousands end in "Too many open files"). A pipeline on a GPU
    (``--gpu-id``, ``util.pipeline_gpu``) runs in one process: worker
    processes cannot share the device's models."""
    from ..util import pipeline_gpu

    if n_process > 1 and pipeline_gpu() >= 0:
        from wasabi import msg

        msg.warn(f"--n-process {n_process}: the pipeline runs on GPU {pipeline_gpu()}, in one process: using 1")
        return 1
    return cpu_bound(n_process, "--n-process", n_items)


def cpu_bound(value: int, option: str, n_items: Optional[int] = None) -> int:
    """A count of processes (``option``: ``--n-process``, ``--workers``)
    bounded by the CPUs this process may use and by ``n_items`` (the units
    of work, when known), with a warning that says so."""
    cpus = usable_cpus()
    limit = max(1, min(cpus, n_items if n_items else cpus))
    if value > limit:
        from wasabi import msg

        what = f"{cpus} CPUs" + (f" and {n_items} inputs" if n_items else "")
        msg.warn(f"{option} {value} is more than this run can use ({what}): using {limit}")
        return limit
    return max(1, value)


def stream_inputs(
    nlp: Language,
    pending: Sequence[Any],
    *,
    read: ReadItems,
    process: Callable[[Any, Any], Any],
    finish: Callable[[Any, Any, List[Any]], None],
    n_process: int,
    batch_size: int,
    disable: Sequence[str] = (),
    max_processes: Optional[int] = None,
) -> None:
    """The items of all pending inputs (each with a unique ``key``) through
    one ordered ``nlp.pipe(..., as_tuples=True)`` stream. ``read(input)``
    gives the input's payload and items (None: skipped); ``process(doc,
    context)`` runs in this process on every doc out of the pipeline;
    ``finish(input, payload, results)`` is called, in input order, as soon as
    the input's last item is out, so memory is bounded by the inputs in
    flight. ``disable``: components left out (e.g. sentence splitters for
    Docs with preset boundaries). ``n_process`` is bounded by the CPUs and
    ``max_processes``, and is 1 on a GPU (:func:`bounded_processes`)."""
    n_process = bounded_processes(n_process, max_processes)
    in_flight: "OrderedDict[str, Tuple[Any, Any, int, List[Any]]]" = OrderedDict()

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


# -- one task per input in forked worker processes ------------------------------------------------

# The work of pool_inputs, set before the workers are forked: they inherit it
# (the pipeline it closes over included), so nothing but an index is sent.
_POOL_WORK: List[Any] = []


def can_fork() -> bool:
    """Whether worker processes can be forked here (Linux, macOS); elsewhere
    they would have to load the pipeline again (spawn)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _pool_task(index: int) -> Any:
    work, items = _POOL_WORK[0]
    return work(items[index])


def pool_inputs(
    pending: Sequence[Any],
    *,
    work: Callable[[Any], Any],
    finish: Callable[[Any, Any], None],
    n_process: int,
) -> None:
    """Each pending input as one task, ``work(input)``, in one of
    ``n_process`` worker processes forked from this one (so they share its
    loaded pipeline; :func:`spacy_rhetoric.util.install_fork_hook` gives
    each torch on one thread); ``finish(input, result)`` runs here, in input
    order. A worker takes the next input as soon as it is done with one, so
    papers of different lengths keep every worker busy (an ordered
    ``nlp.pipe`` stream hands batches round-robin and waits for the slowest),
    and the work done here is only what ``finish`` does: the worker reads
    the paper, runs the pipeline and can write the result itself. A worker
    that dies (killed, out of memory) ends the run with ``BrokenProcessPool``
    instead of a wait for ever; an exception in ``work`` is raised here; on
    any exit the workers still running are ended (forked inside
    ``interrupts.sigterm_raises`` they ignore Ctrl-C and end on SIGTERM).
    Needs :func:`can_fork`."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pending = list(pending)
    if not pending:
        return
    before = set(multiprocessing.active_children())
    _POOL_WORK[:] = [(work, pending)]
    executor = ProcessPoolExecutor(max_workers=min(n_process, len(pending)),
                                   mp_context=multiprocessing.get_context("fork"))
    workers: List[Any] = []
    clean = False
    try:
        results = executor.map(_pool_task, range(len(pending)))
        workers = [p for p in multiprocessing.active_children() if p not in before]
        for inp, result in zip(pending, results):
            finish(inp, result)
        clean = True
    finally:
        _POOL_WORK.clear()
        if not clean:  # an error or an interrupt: no worker finishes its paper first
            executor.shutdown(wait=False, cancel_futures=True)
            for proc in workers:
                if proc.is_alive():
                    proc.terminate()
            for proc in workers:
                proc.join(timeout=10)
                if proc.is_alive():  # SIGTERM not heeded in time (a loaded machine): SIGKILL
                    proc.kill()
                    proc.join(timeout=10)
        executor.shutdown(wait=True)
