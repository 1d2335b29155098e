"""CL-SciSumm task 1a evaluation by sentence-id overlap.

For each citance the system returns sentence ids (sids) of the reference
paper; the gold ids are the ``Reference Offset`` of the annotation. Counts
are summed over citances (micro average, as the shared task's
sentence-overlap scores and the CitRet authors' evaluation do):

    precision = Σ |pred ∩ gold| / Σ |pred|
    recall    = Σ |pred ∩ gold| / Σ |gold|
    F1        = 2 P R / (P + R)

A citance is identified by its topic, citing article and citance number
(:func:`citance_key`); the citation offsets are not used, because the CSV
releases write a placeholder (``0``) there for every row. The records of one
citance (one per annotator) are merged into one :class:`GoldCitance` that
keeps each annotator's gold sids. Two protocols score the same predictions:

- ``union``: one gold set per citance, the UNION of its annotators' sids
  (the convention of the CitRet authors' evaluation code); each citance is
  counted once;
- ``per_annotator`` (the official CL-SciSumm task 1a protocol): P/R/F1
  (micro over citances) against each annotator's gold of a topic separately,
  then the plain mean of P, R and F1 over all (topic, annotator) pairs. An
  annotator is the record's ``Annotator`` value, or its annotation file when
  that field is missing (older releases have one file per annotator).
"""
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Sequence, Tuple

UNNAMED = "(file {})"


@dataclass
class GoldCitance:
    key: Tuple[str, str, str]  # (topic, citing article, citance number)
    text: str
    gold_by_annotator: Dict[str, List[str]] = field(default_factory=dict)
    records: List = field(default_factory=list)

    @property
    def topic(self) -> str:
        return self.key[0]

    @property
    def citing_article(self) -> str:
        return self.key[1]

    @property
    def citance_number(self) -> str:
        return self.key[2]

    @property
    def gold(self) -> set:
        """The union of the annotators' gold sids."""
        return {sid for sids in self.gold_by_annotator.values() for sid in sids}


def citance_key(record) -> Tuple[str, str, str]:
    """``(topic, citing article, citance number)`` of an annotation record."""
    return (str(record.topic), str(record.citing_article).strip(), str(record.citance_number).strip())


def annotator_of(record) -> str:
    """The record's annotator name, or its annotation file when it has none."""
    name = (record.annotator or "").strip()
    return name or UNNAMED.format(getattr(record.path, "name", record.path))


def merge_annotators(records: Iterable) -> List["GoldCitance"]:
    """One :class:`GoldCitance` per citance key, in order of first record;
    each annotator's gold sids kept (in order, without repeats)."""
    merged: Dict[Tuple, GoldCitance] = {}
    for rec in records:
        key = citance_key(rec)
        if key not in merged:
            merged[key] = GoldCitance(key, (rec.citation_text or "").strip())
        cit = merged[key]
        sids = cit.gold_by_annotator.setdefault(annotator_of(rec), [])
        for sid in (str(s).strip() for s in rec.reference_offsets):
            if sid and sid not in sids:
                sids.append(sid)
        if not cit.text:
            cit.text = (rec.citation_text or "").strip()
        cit.records.append(rec)
    return list(merged.values())


def overlap_counts(predicted: Sequence[str], gold: Iterable[str]) -> Tuple[int, int, int]:
    pred = list(dict.fromkeys(str(p) for p in predicted))
    gold_set = {str(g) for g in gold}
    return len(set(pred) & gold_set), len(pred), len(gold_set)


@dataclass
class Task1aScore:
    tp: int = 0
    n_pred: int = 0
    n_gold: int = 0
    citances: int = 0

    def add(self, predicted: Sequence[str], gold: Iterable[str]) -> None:
        tp, n_pred, n_gold = overlap_counts(predicted, gold)
        self.tp += tp
        self.n_pred += n_pred
        self.n_gold += n_gold
        self.citances += 1

    @property
    def precision(self) -> float:
        return self.tp / self.n_pred if self.n_pred else 0.0

    @property
    def recall(self) -> float:
        return self.tp / self.n_gold if self.n_gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> Dict[str, float]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.tp,
            "predicted": self.n_pred,
            "gold": self.n_gold,
            "citances": self.citances,
        }


class Task1aEvaluation:
    """Both protocols over the same predictions (see the module docstring)."""

    def __init__(self) -> None:
        self.union = Task1aScore()
        self.by_annotator: Dict[Tuple[str, str], Task1aScore] = {}

    def add(self, citance: GoldCitance, predicted: Sequence[str]) -> None:
        self.union.add(predicted, citance.gold)
        for annotator, gold in citance.gold_by_annotator.items():
            key = (citance.topic, annotator)
            self.by_annotator.setdefault(key, Task1aScore()).add(predicted, gold)

    def per_annotator(self) -> Dict:
        scores = list(self.by_annotator.values())
        n = len(scores)

        def mean(values: List[float]) -> float:
            return sum(values) / n if n else 0.0

        return {
            "precision": mean([s.precision for s in scores]),
            "recall": mean([s.recall for s in scores]),
            "f1": mean([s.f1 for s in scores]),
            "annotators": n,
            "scores": [
                {"topic": topic, "annotator": annotator, **score.to_dict()}
                for (topic, annotator), score in self.by_annotator.items()
            ],
        }
