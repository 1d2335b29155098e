"""Open-set retrieval (SciToricsBERT §4.3): an encoder trained on a sample of
the labels, scored on sentences of the labels it saw and of those it never
saw. The pieces of ``benchmarks/encoder/open_set.py``: the seeded label
sample (:func:`sample_labels`), the epochs that keep the number of training
samples about equal (:func:`epochs_for`), the scores on a subset of labels
(:func:`subset_scores`) and the summary over seeds (:func:`summarise`)."""
import random
import statistics
from collections import defaultdict
from typing import Any, Dict, List, Optional, Sequence

import numpy

from .metrics import retrieval_scores

LOSS_PREFIX = "spacy_rhetoric."


def loss_name(name: str) -> str:
    """``SoftmaxLoss`` -> ``spacy_rhetoric.SoftmaxLoss.v1`` (full names pass through)."""
    if name.startswith(LOSS_PREFIX):
        return name
    return f"{LOSS_PREFIX}{name}" + ("" if name.endswith(".v1") else ".v1")


def short_loss(name: str) -> str:
    """``spacy_rhetoric.ArcFaceLoss.v1`` -> ``ArcFaceLoss``."""
    return name[len(LOSS_PREFIX):].rsplit(".v", 1)[0] if name.startswith(LOSS_PREFIX) else name


def sample_labels(all_labels: Sequence[str], n: int, seed: int) -> List[str]:
    """``n`` of the labels, sorted; the sample depends only on the label set, ``n`` and ``seed``."""
    labels = sorted(all_labels)
    if n >= len(labels):
        return labels
    return sorted(random.Random(f"{seed}:{n}").sample(labels, n))


def epochs_for(n_train_labels: int, n_all: int, epochs: float) -> int:
    """``round(epochs * n_all / n_train_labels)``, at least 1 (about the same samples for every label count)."""
    return max(1, int(round(epochs * n_all / n_train_labels)))


def subset_scores(vectors, labels: Sequence[str], keep: set) -> Optional[Dict[str, float]]:
    """``retrieval_scores`` among the sentences whose label is in ``keep`` (None: fewer than 2)."""
    idx = [i for i, label in enumerate(labels) if label in keep]
    if len(idx) < 2:
        return None
    scores = retrieval_scores(numpy.asarray(vectors)[idx], [labels[i] for i in idx])
    scores["n_sentences"] = len(idx)
    scores["n_labels"] = len({labels[i] for i in idx})
    return scores


def run_key(loss: str, n: int, seed: int) -> str:
    return f"{short_loss(loss)}|{n}|{seed}"


def summarise(results: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Per loss and label count: the mean and population std over seeds of
    P@1 and MAP@R on the seen, unseen and all labels."""
    groups = defaultdict(list)
    for r in results:
        groups[(r["loss"], r["n_train_labels"])].append(r)
    summary = {}
    for (loss, n), rows in sorted(groups.items()):
        entry = {"loss": loss, "n_train_labels": n, "n_seeds": len(rows)}
        for part in ("seen", "unseen", "all"):
            for metric in ("p_at_1", "map_at_r"):
                values = [r[part][metric] for r in rows if r.get(part)]
                if values:
                    entry[f"{part}_{metric}"] = statistics.fmean(values)
                    entry[f"{part}_{metric}_std"] = statistics.pstdev(values) if len(values) > 1 else 0.0
        summary[f"{loss}|{n}"] = entry
    return summary
