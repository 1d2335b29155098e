"""Document-disjoint train/test splits of a corpus.

For corpora released as a single file (PMC-Sents-FULL has only its dev file
public): the distinct doc ids (``doc._.rhetoric_doc_id``, set by the readers;
docs with the same id stay together) are sorted, shuffled with
``numpy.random.default_rng(seed)``, and the first ``round(share * n)`` ids go
to TRAIN, the rest to TEST. No id is on both sides. This is the split
``benchmarks/encoder/bench_embeddings.py`` uses for PMC-Sents-FULL, so models trained
on TRAIN are scored on the same test articles as the baseline rows there.
A doc without an id is an error (the split could not keep it disjoint).
Command line: ``spacy-rhetoric split``.

Cross-validation folds (:func:`kfold_doc_ids`; ``split --folds K --fold I``):
the same sorted, seeded permutation of the distinct ids dealt into ``K``
folds in turn (fold ``i`` holds permuted ids ``i``, ``i + K``, ...), so the
folds are document-disjoint, cover every id once and differ in size by at
most one. ``benchmarks/fullpaper/bench_fields.py`` cross-validates on ART / CoreSC
(225 papers, no published split) with ``K = 5``, seed 0.

With ``labels`` (one per item of ``ids``), the split is also stratified by
label: sklearn's ``StratifiedGroupKFold`` (groups = ids) with
``round(1 / (1 - share))`` folds, shuffled with ``seed``; fold 0 is the test
side. The distant set of ``spacy-rhetoric label`` is split this way by paper
(``corpus_builder.merge.valid_papers``), so rare communicative functions are on both
sides as far as whole papers allow. When no label has a member per fold (tiny
corpora) it falls back to ``GroupKFold``; with fewer than 2 groups everything
is train.
"""
import warnings
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import RhetoricError
from ..extensions import docbin_docs
from ..io import atomic_path, check_input, check_outputs


def split_doc_ids(ids: Sequence[str], *, share: float = 0.8, seed: int = 0,
                  labels: Optional[Sequence[str]] = None) -> Tuple[List[str], List[str]]:
    """(train ids, test ids) of the sorted distinct ``ids`` (see module doc);
    stratified by ``labels`` (one per item of ``ids``) when given."""
    import numpy

    if not 0.0 < share < 1.0:
        raise RhetoricError(f"share must be between 0 and 1, got {share}")
    if labels is not None:
        return _stratified_group_split(list(ids), list(labels), share=share, seed=seed)
    distinct = sorted(set(ids))
    perm = numpy.random.default_rng(seed).permutation(len(distinct))
    n_train = int(round(share * len(distinct)))
    return [distinct[i] for i in perm[:n_train]], [distinct[i] for i in perm[n_train:]]


def kfold_doc_ids(ids: Sequence[str], *, n_folds: int = 5, seed: int = 0) -> List[List[str]]:
    """The test ids of each of ``n_folds`` document-disjoint folds of the
    distinct ``ids`` (see the module docstring; each fold's ids sorted)."""
    import numpy

    if int(n_folds) < 2:
        raise RhetoricError(f"folds must be at least 2, got {n_folds}")
    distinct = sorted(set(ids))
    perm = numpy.random.default_rng(seed).permutation(len(distinct))
    return [sorted(distinct[i] for i in perm[k::n_folds]) for k in range(n_folds)]


def _stratified_group_split(ids: List[str], labels: List[str], *, share: float,
                            seed: int) -> Tuple[List[str], List[str]]:
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    if len(ids) != len(labels):
        raise ValueError(f"split_doc_ids: {len(ids)} ids but {len(labels)} labels")
    groups = sorted(set(ids))
    if len(groups) < 2:
        return groups, []
    n_splits = min(len(groups), max(2, int(round(1.0 / (1.0 - share)))))
    X = [[0]] * len(labels)
    if Counter(labels).most_common(1)[0][1] < n_splits:
        splitter = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    else:
        splitter = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        # "The least populated class in y has only k members": rare labels
        # simply cannot be in every fold.
        warnings.simplefilter("ignore", UserWarning)
        _, test_idx = next(iter(splitter.split(X, labels, ids)))
    test = {ids[i] for i in test_idx}
    return [g for g in groups if g not in test], sorted(test)


def split_docbin(input_path: Path, train_path: Path, test_path: Path, *, share: float = 0.8,
                 seed: int = 0, force: bool = False, folds: int = 0, fold: int = 0) -> Dict[str, int]:
    """Split the DocBin at ``input_path`` by doc id into two DocBins: ``share``
    of the ids on the train side or, with ``folds`` > 0, fold ``fold`` of
    :func:`kfold_doc_ids` on the test side and the other folds on the train
    side. The paths are checked before any work (no output on an input or on
    the other output); each output is written to a temporary file and renamed
    into place when complete."""
    import spacy
    from spacy.tokens import DocBin

    from ..extensions import DOC_ID, get_doc_value

    if folds and not 0 <= fold < folds:
        raise RhetoricError(f"fold must be between 0 and {folds - 1} (--folds {folds}), got {fold}")
    check_input(input_path, what="input")
    check_outputs({"train output": train_path, "test output": test_path}, inputs=[input_path],
                  kinds={"train output": "spacy", "test output": "spacy"}, force=force)
    nlp = spacy.blank("en")
    try:
        docs = list(docbin_docs(DocBin().from_disk(input_path), nlp.vocab))
    except Exception as err:  # not a DocBin: zlib/msgpack errors
        raise RhetoricError(f"{input_path}: not a readable .spacy file ({type(err).__name__}: {err})") from err
    ids = []
    for i, doc in enumerate(docs):
        doc_id = get_doc_value(doc, DOC_ID)
        if doc_id is None:
            raise RhetoricError(f"{input_path}: doc {i} has no doc id (rhetoric_doc_id); cannot split by document")
        ids.append(str(doc_id))
    if folds:
        test_ids = kfold_doc_ids(ids, n_folds=folds, seed=seed)[fold]
        train_ids = sorted(set(ids) - set(test_ids))
    else:
        train_ids, test_ids = split_doc_ids(ids, share=share, seed=seed)
    train_set = set(train_ids)
    out = {"train": DocBin(store_user_data=True), "test": DocBin(store_user_data=True)}
    counts = {"train_docs": 0, "test_docs": 0, "train_sentences": 0, "test_sentences": 0,
              "train_ids": len(train_ids), "test_ids": len(test_ids)}
    for doc, doc_id in zip(docs, ids):
        side = "train" if doc_id in train_set else "test"
        out[side].add(doc)
        counts[f"{side}_docs"] += 1
        counts[f"{side}_sentences"] += sum(1 for _ in doc.sents) if len(doc) else 0
    for side, path in (("train", train_path), ("test", test_path)):
        with atomic_path(path) as tmp:
            out[side].to_disk(tmp)
    return counts


def doc_folds(docs, *, n_folds: int = 5, seed: int = 0) -> List[str]:
    """Each doc's fold, ``"fold1"``..``"fold<n_folds>"``: the
    document-disjoint folds of their ids (``doc._.rhetoric_doc_id``;
    :func:`kfold_doc_ids`, seeded)."""
    from ..extensions import DOC_ID, get_doc_value

    ids = [str(get_doc_value(d, DOC_ID)) for d in docs]
    fold_of = {i: f"fold{k + 1}" for k, fold in enumerate(kfold_doc_ids(ids, n_folds=n_folds, seed=seed))
               for i in fold}
    return [fold_of[i] for i in ids]
