"""The project's job runner: the pending inputs of a resumable build
(``spacy-rhetoric label``, ``annotate``, ``index``) processed on this machine
or by a Dask scheduler. What a build does with an input (read it, run the
pipeline, write its shard or part) is given by the caller; the runner owns
the loops, the bookkeeping and the workers' pipelines.

``local``
    :func:`stream_inputs`: the items of all pending inputs through one ordered
    ``nlp.pipe(..., as_tuples=True, n_process=...)`` stream; an input is
    finished (its shard written) as soon as its last item is out, so memory
    is bounded by the inputs in flight. :func:`bounded_processes`:
    ``--n-process`` bounded by the CPUs and the inputs, with a warning.
``cluster``
    :func:`dask_tasks`: one task per pending input, at most two per worker
    in flight; the client reads the inputs and finishes them, so workers
    need neither the corpus nor a shared file system. Every task has one
    shape (:func:`nlp_task`): the worker's pipeline, loaded once per worker
    process from a ``(load, args)`` pair (:func:`worker_nlp`; the args travel
    once as computed futures), then the caller's ``work(nlp, *args)``.
``common``
    :class:`JobError`, the progress bar of a build and skip-and-count
    (:func:`record_skip`).
"""
from .cluster import dask_tasks, import_distributed, nlp_task, worker_nlp  # noqa: F401
from .common import JobError, NoProgress, progress_bar, record_skip  # noqa: F401
from .local import bounded_processes, stream_inputs  # noqa: F401
