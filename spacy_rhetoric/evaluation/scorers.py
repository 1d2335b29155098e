"""Scores of sentence labels: the one definition behind both the registered
scorer of ``rhetoric_function_classifier`` (what ``spacy train`` reports) and
``spacy-rhetoric evaluate`` (``evaluation.metrics.classifier_scores``)."""
from typing import Any, Dict, Optional, Sequence

NO_PREDICTION = "\x00no-prediction"


def sentence_label_scores(gold: Sequence[str], predicted: Sequence[Optional[str]]) -> Dict[str, Any]:
    """Single-label sentence classification scores.

    Definition: every labelled gold sentence is one item; a sentence without a
    prediction (None) counts as wrong. F1-micro = accuracy (correct items /
    all items; micro P = micro R = F1 since every item has one gold and at
    most one predicted label, a missing one being wrong). Per-label P/R/F are
    over the labels seen in gold or predictions (a missing prediction is a
    false negative of its gold label and nobody's false positive; 0 where
    undefined); F1/P/R-macro are their unweighted means.

    Returns ``{"f_micro", "f_macro", "p_macro", "r_macro", "per_label":
    {label: {"p", "r", "f", "support"}}, "n_sentences", "n_unpredicted"}``;
    the scores are None when there are no items.
    """
    from sklearn.metrics import precision_recall_fscore_support

    gold = [str(g) for g in gold]
    pred = [NO_PREDICTION if p is None else str(p) for p in predicted]
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    n_unpredicted = sum(1 for p in predicted if p is None)
    if not gold:
        return {
            "f_micro": None, "f_macro": None, "p_macro": None, "r_macro": None,
            "per_label": {}, "n_sentences": 0, "n_unpredicted": 0,
        }
    labels = sorted(set(gold) | {p for p in pred if p != NO_PREDICTION})
    ps, rs, fs, support = precision_recall_fscore_support(
        gold, pred, labels=labels, average=None, zero_division=0
    )
    return {
        "f_micro": sum(g == p for g, p in zip(gold, pred)) / len(gold),
        "f_macro": float(fs.mean()),
        "p_macro": float(ps.mean()),
        "r_macro": float(rs.mean()),
        "per_label": {
            label: {"p": float(p), "r": float(r), "f": float(f), "support": int(n)}
            for label, p, r, f, n in zip(labels, ps, rs, fs, support)
        },
        "n_sentences": len(gold),
        "n_unpredicted": n_unpredicted,
    }
