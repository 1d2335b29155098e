"""Corpus jobs: what ``spacy-rhetoric label``, ``annotate`` and ``index`` share
to run over a folder of papers, resumably, on this machine or a Dask cluster.
The job (``corpus_builder.build``, ``apps.annotate``, ``search.index``) says
what to do with one input; everything else is here.

The life cycle of a job over ``INPUTS`` into ``OUT``:

1. **check** every argument and path before any work (``io.check_input``,
   ``check_output``; ``settings.check_build_dir``: no file of somebody else's
   replaced);
2. **discover** (``inputs.discover_inputs``): the files below the inputs,
   each one unit of work with a key (its path relative to the folder given)
   and a content fingerprint; the files of any job are never inputs; a
   FIFO, device or socket is never opened and an unreadable file never
   stops the run (both skipped and counted), symbolic links are followed at
   most once per real directory;
3. **lock** ``OUT`` (``settings.lock_build``: one run at a time; the lock
   goes with the run, however it ends) and **record** the settings in
   ``OUT/build_config.json`` (``settings.prepare_output_dir``): a resumed run
   with other settings is refused unless ``--overwrite``;
4. **shard**: every pending input (no shard yet) is read, run through the
   pipeline (``local.stream_inputs``: one ordered ``nlp.pipe`` stream, or
   ``cluster.dask_tasks``: one Dask task per input) and written to its shard
   (``shards.write_shard``), the input's done-marker; an unusable input is
   skipped and counted (``common.record_skip``);
5. **merge** the shards in input-key order into the outputs, written
   atomically (``merge``), then the **summary** (``OUT/summary.json``).

**Resume**: a run interrupted anywhere (Ctrl-C, ``kill``, a crash, a full
disk) leaves finished shards only (each written to a temporary file and
renamed); rerunning the same command skips the inputs whose shard exists and
ends with the output of an uninterrupted run. An edited input has a new
fingerprint, so it is done again and its stale shard removed. SIGINT and
SIGTERM print one line saying what is kept and how to resume
(``interrupts.report_interrupt``).

``inputs``
    :class:`InputFile`, :func:`discover_inputs`, :func:`walk_files`,
    :func:`file_fingerprint`.
``shards``
    Shard paths, :func:`write_shard` (the shard folder listed once per run,
    :func:`earlier_shards`), :func:`read_shard`.
``settings``
    The file names of an output folder, ``build_config.json``, the lock,
    ``--code`` files.
``merge``
    The shards read back in input-key order; concatenated outputs.
``local``
    :func:`stream_inputs`: the items of all pending inputs through one ordered
    ``nlp.pipe(..., as_tuples=True, n_process=...)`` stream; an input is
    finished (its shard written) as soon as its last item is out, so memory
    is bounded by the inputs in flight. :func:`bounded_processes`:
    ``--n-process`` bounded by the CPUs and the inputs, with a warning.
    :func:`pool_inputs`: one task per input in forked worker processes, each
    taking the next input when it is done with one (``annotate --n-process``
    over paper files: the worker reads, annotates and writes the shard).
``cluster``
    :func:`dask_tasks`: one task per pending input, at most two per worker
    in flight; the client reads the inputs and finishes them, so workers
    need neither the corpus nor a shared file system. Every task has one
    shape (:func:`nlp_task`): the worker's pipeline, loaded once per worker
    process from a ``(load, args)`` pair (:func:`worker_nlp`; the args travel
    once as computed futures), then the caller's ``work(nlp, *args)``. A
    LocalCluster has at most one worker per CPU (and per input), listens on
    127.0.0.1 only, and its workers leave Ctrl-C to the run.
``interrupts``
    SIGTERM raised like Ctrl-C, and the one line an interrupted job prints.
``common``
    :class:`JobError`, :class:`CorpusBuildError`, the progress bar of a job
    and skip-and-count (:func:`record_skip`).
"""
from .cluster import dask_tasks, import_distributed, nlp_task, worker_nlp  # noqa: F401
from .common import CorpusBuildError, JobError, NoProgress, progress_bar, record_skip  # noqa: F401
from .inputs import InputFile, discover_inputs, file_fingerprint  # noqa: F401
from .local import bounded_processes, can_fork, pool_inputs, stream_inputs  # noqa: F401
