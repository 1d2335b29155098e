"""Distant-supervision corpus builder (the library behind ``spacy-rhetoric label``).

Streams a corpus of papers through the English parser and the
``rhetoric_phrase_labeler`` (paper §3.1-3.2: a sentence inherits the label of a
listed n-gram that contains its dependency root) and writes the labeled
sentences as a de-duplicated, by-paper train/validation split.

It is a job of the project's job runner (``spacy_rhetoric.jobs``, whose
docstring gives the life cycle): the inputs are found and fingerprinted
there (``jobs.inputs``: CL-SciSumm reference-paper XMLs, ``.txt``,
``.jsonl`` and ``.spacy`` files; formats: ``spacy_rhetoric.readers.label_inputs``),
each input's labeled sentences go into its shard (``jobs.shards``: a
restarted build skips inputs whose shard exists), the settings are recorded
and checked on resume and the output folder is locked (``jobs.settings``).
What is specific to distant supervision lives here, one module per concern:

``settings``
    Label's output names, ``LabelSettings``, the phrase list and its digest.
``labeling``
    The pipeline: ``rhetoric_single_sentence``
    (``spacy_rhetoric.pipeline.single_sentence``) first, so every source
    sentence is one Doc the parser keeps whole (one sentence, one root), then
    the parser and the labeler. Whitespace inside a sentence is collapsed.
``runners``
    Label's read, process and finish steps on the job runner: all pending
    inputs through one ordered ``nlp.pipe`` stream (``jobs.stream_inputs``),
    or one Dask task per input (``jobs.dask_tasks``: the client reads inputs
    and writes shards, workers only label sentence lists, so a remote cluster
    needs neither the corpus nor a shared file system; its workers need
    spacy_rhetoric and the parser package installed, and a ``code`` file at
    the same path). The phrase list travels as a computed future, so losing
    a worker loses no data. A label shard's header holds the input's counts.
``merge``
    Deterministic, rerun in full on every build. Shards are read in sorted
    input-key order (``jobs.merge.shard_records``), sentences in source
    order. De-duplication is by normalised text (Unicode NFKC, case-folded,
    whitespace collapsed); the FIRST copy in that order is kept. The kept
    sentences are split by paper with ``spacy_rhetoric.readers.splits.split_doc_ids``,
    stratified by label (StratifiedGroupKFold, ``round(1 / valid_fraction)``
    folds, fold 0 is validation). Each paper is entirely on one side.
    Outputs are written atomically.
``build``
    ``build_corpus`` (its options in ``BuildSettings``): arguments and paths
    checked before any work, discovery, labeling, merge, ``summary.json``.
"""
from .build import BuildSettings, build_corpus, check_build_args
from .merge import normalise_text, valid_papers
from .settings import CorpusBuildError, LabelSettings

__all__ = [
    "BuildSettings",
    "CorpusBuildError",
    "LabelSettings",
    "build_corpus",
    "check_build_args",
    "normalise_text",
    "valid_papers",
]
