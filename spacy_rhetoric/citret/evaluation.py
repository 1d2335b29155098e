"""CL-SciSumm task 1a evaluation by sentence-id overlap.

For each citance the system returns sentence ids (sids) of the reference
paper; the gold ids are the ``Reference Offset`` of the annotation. Counts
are summed over all citances (micro average, as the shared task's
sentence-overlap scores and the CitRet authors' evaluation do):

    precision = Σ |pred ∩ gold| / Σ |pred|
    recall    = Σ |pred ∩ gold| / Σ |gold|
    F1        = 2 P R / (P + R)

Several annotators: when a topic has several annotation files (or several
records for the same citance), the records of one citance — same citing
article and same citation sentence offsets, or the same normalised
citation text when offsets are missing — are merged into one citance whose
gold set is the UNION of the annotators' reference offsets (the convention
of the CitRet authors' evaluation code). Each citance is counted once.
"""
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Sequence, Set, Tuple


@dataclass
class GoldCitance:
    key: Tuple
    text: str
    gold: Set[str]
    records: List = field(default_factory=list)


def _article(name: str) -> str:
    name = (name or "").strip()
    return re.sub(r"\.(txt|xml)$", "", name, flags=re.I)


def citance_key(record) -> Tuple:
    offsets = tuple(sorted(str(o).strip() for o in (record.citation_offsets or []) if str(o).strip()))
    if offsets:
        return (_article(record.citing_article), offsets)
    text = re.sub(r"\s+", " ", (record.citation_text or "").lower()).strip()
    return (_article(record.citing_article), text)


def merge_annotators(records: Iterable) -> List[GoldCitance]:
    """One :class:`GoldCitance` per distinct citance, gold = union of sids."""
    merged: Dict[Tuple, GoldCitance] = {}
    for rec in records:
        key = citance_key(rec)
        gold = {str(s).strip() for s in rec.reference_offsets if str(s).strip()}
        if key not in merged:
            merged[key] = GoldCitance(key, (rec.citation_text or "").strip(), set(), [])
        merged[key].gold |= gold
        merged[key].records.append(rec)
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
