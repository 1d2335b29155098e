"""Distant-supervision corpus builder (the library behind ``spacy-rhetoric label``).

Streams a corpus of papers through the English parser and the
``rhetoric_phrase_labeler`` (paper §3.1-3.2: a sentence inherits the label of a
listed n-gram that contains its dependency root) and writes the labeled
sentences as a de-duplicated, by-paper train/validation split.

Modules, one per concern:

``settings``
    Output file names, ``LabelSettings``, the phrase list, ``--code``, and
    ``build_config.json``: resuming with different settings is refused unless
    ``overwrite`` is given.
``inputs``
    Input discovery. CL-SciSumm reference-paper XMLs (a ``cl-scisumm`` root, a
    topic root, or single ``.xml`` files), ``.txt``, ``.jsonl`` and ``.spacy``
    files (formats: ``spacy_rhetoric.readers.label_inputs``). One input file is
    the unit of work, with a key (its path relative to the argument) and a
    content fingerprint. The files a label build writes (shards, outputs,
    summary, config) are never inputs.
``labeling``
    The pipeline: ``rhetoric_single_sentence``
    (``spacy_rhetoric.pipeline.single_sentence``) first, so every source
    sentence is one Doc the parser keeps whole (one sentence, one root), then
    the parser and the labeler. Whitespace inside a sentence is collapsed.
``shards``
    ``shards/<stem>-<key hash>-<content hash>.jsonl``: a header line with the
    input's counts, then one line per labeled sentence, written to a
    temporary file and renamed into place. A shard is the done-marker of its
    input: a restarted build skips inputs whose shard exists, so no input is
    labeled twice and none is lost; an edited input has a new content hash,
    so it is labeled again and its stale shard removed.
``runners``
    All pending inputs flow through one ``nlp.pipe(..., as_tuples=True,
    n_process=..., batch_size=...)`` stream (order preserved); an input's
    shard is written as soon as its last sentence is out, so memory is
    bounded by the inputs in flight. With a Dask scheduler the same work runs
    as one task per input (the client reads inputs and writes shards, workers
    only label sentence lists, so a remote cluster needs neither the corpus
    nor a shared file system; its workers need spacy_rhetoric and the parser
    package installed, and a ``code`` file at the same path). The phrase list
    travels as a computed future, so losing a worker loses no data.
    The loops themselves are the project's job runner
    (``spacy_rhetoric.jobs``: ``stream_inputs``, ``dask_tasks``), which
    ``spacy-rhetoric annotate`` and ``index`` run on too.
``merge``
    Deterministic, rerun in full on every build. Shards are read in sorted
    input-key order, sentences in source order. De-duplication is by
    normalised text (Unicode NFKC, case-folded, whitespace collapsed); the
    FIRST copy in that order is kept. The kept sentences are split by paper
    with ``spacy_rhetoric.readers.splits.split_doc_ids``, stratified by label
    (StratifiedGroupKFold, ``round(1 / valid_fraction)`` folds, fold 0 is
    validation). Each paper is entirely on one side. Outputs are written
    atomically.
``build``
    ``build_corpus``: arguments and paths checked before any work, discovery,
    labeling, merge, ``summary.json``.
"""
from .build import build_corpus, check_build_args
from .inputs import InputFile, discover_inputs
from .merge import normalise_text, valid_papers
from .settings import CorpusBuildError, LabelSettings

__all__ = [
    "CorpusBuildError",
    "InputFile",
    "LabelSettings",
    "build_corpus",
    "check_build_args",
    "discover_inputs",
    "normalise_text",
    "valid_papers",
]
