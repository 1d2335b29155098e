"""CL-SciSumm task 1a evaluation by sentence-id overlap.

For each citance the system returns sentence ids (sids) of the reference
paper; the gold ids are the ``Reference Offset`` of the annotation. Counts
are summed over citances (micro average, as the shared task's
sentence-overlap scores and the CitRet authors' evaluation do):

    precision = Σ |pred ∩ gold| / Σ |pred|
    recall    = Σ |pred ∩ gold| / Σ |gold|
    F1        = 2 P R / (P + R)

A citance is a citing sentence (or run of sentences) of a citing paper, and
it is keyed by what identifies it, not by its ``Citance Number``: annotators
number citances inconsistently (the same number for two different citing
sentences, two numbers for one). :func:`key_citances` groups the records of
one citing article whose citation text, normalised (:func:`normalise_citance`:
lower case, letters and digits only), is the same, or contains the other's
whole (at least :data:`MIN_CONTAINED_WORDS` words: one annotator took one
sentence, another two); a record without citation text is identified by its
citation offsets, unless they are the CSV releases' placeholder ``0``; a
record with neither cannot be keyed and is counted, not scored. A citance's
key is ``(topic, citing article, its citance numbers joined by "+")``. The
records of one citance (one per annotator, or several of one annotator) are
merged into one :class:`GoldCitance` that keeps each annotator's gold sids.
Two protocols score the same predictions:

- ``union``: one gold set per citance, the UNION of its annotators' sids
  (the convention of the CitRet authors' evaluation code); each citance is
  counted once;
- ``per_annotator`` (the official CL-SciSumm task 1a protocol): P/R/F1
  (micro over citances) against each annotator's gold of a topic separately,
  then the plain mean of P, R and F1 over all (topic, annotator) pairs. An
  annotator is the record's ``Annotator`` value, or its annotation file when
  that field is missing (older releases have one file per annotator).
"""
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

UNNAMED = "(file {})"
MIN_CONTAINED_WORDS = 5
_NON_WORD = re.compile(r"[^0-9a-z]+")


@dataclass
class GoldCitance:
    key: Tuple[str, str, str]  # (topic, citing article, citance number(s) joined by "+")
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
    """``(topic, citing article, citance number)`` of an annotation record
    as its annotator numbered it (not the key of :func:`key_citances`)."""
    return (str(record.topic), str(record.citing_article).strip(), str(record.citance_number).strip())


def normalise_citance(text: Optional[str]) -> str:
    """Lower case, runs of anything but letters and digits as one space."""
    return " ".join(_NON_WORD.sub(" ", (text or "").lower()).split())


def citance_identity(record) -> Optional[str]:
    """What identifies the citing sentence(s) of a record: its normalised
    citation text, else its citation offsets (``0`` is a placeholder), else
    None."""
    text = normalise_citance(record.citation_text)
    if text:
        return text
    offsets = sorted({str(o).strip() for o in record.citation_offsets} - {"", "0"})
    return "offsets:" + ",".join(offsets) if offsets else None


def same_citance(a: str, b: str) -> bool:
    """Whether two citance identities (``citance_identity``) name the same citing
    sentence: equal, or one normalised text holding the other (at least
    ``MIN_CONTAINED_WORDS`` words); offsets keys match only when equal."""
    if a == b:
        return True
    if a.startswith("offsets:") or b.startswith("offsets:"):
        return False
    short, long_ = sorted((a, b), key=len)
    return len(short.split()) >= MIN_CONTAINED_WORDS and f" {short} " in f" {long_} "


def _number_sort(value: str):
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


def key_citances(records: Iterable) -> Tuple[List["GoldCitance"], List]:
    """``(citances, unkeyed records)``: one :class:`GoldCitance` per citance
    (see the module docstring), in order of first record, each annotator's
    gold sids kept (in order, without repeats); the records that cannot be
    keyed (no citation text, no real citation offsets) apart."""
    records = list(records)
    position = {id(rec): i for i, rec in enumerate(records)}
    unkeyed = []
    groups: Dict[Tuple[str, str], List[Tuple[str, List]]] = {}  # (topic, citing) -> [(identity, records)]
    for rec in records:
        identity = citance_identity(rec)
        if identity is None:
            unkeyed.append(rec)
            continue
        clusters = groups.setdefault((str(rec.topic), str(rec.citing_article).strip()), [])
        hits = [i for i, (ident, _) in enumerate(clusters) if same_citance(identity, ident)]
        if not hits:
            clusters.append((identity, [rec]))
            continue
        ident, members = clusters[hits[0]]
        members.append(rec)
        for i in reversed(hits[1:]):  # the record joins two clusters: one citance
            members.extend(clusters[i][1])
            del clusters[i]
        clusters[hits[0]] = (max(ident, identity, key=len), members)
    found = [(where, sorted(members, key=lambda r: position[id(r)]))
             for where, clusters in groups.items() for _, members in clusters]
    found.sort(key=lambda item: position[id(item[1][0])])
    citances: List[GoldCitance] = []
    seen_keys = set()
    for where, members in found:
        numbers = sorted({str(r.citance_number).strip() for r in members}, key=_number_sort)
        key = (where[0], where[1], "+".join(numbers))
        n = 2
        while key in seen_keys:  # the same numbers for two citances: keep them apart
            key = (where[0], where[1], f"{'+'.join(numbers)}#{n}")
            n += 1
        seen_keys.add(key)
        cit = GoldCitance(key, "")
        for rec in members:
            sids = cit.gold_by_annotator.setdefault(annotator_of(rec), [])
            for sid in (str(s).strip() for s in rec.reference_offsets):
                if sid and sid not in sids:
                    sids.append(sid)
            if not cit.text:
                cit.text = (rec.citation_text or "").strip()
            cit.records.append(rec)
        citances.append(cit)
    return citances, unkeyed


def annotator_of(record) -> str:
    """The record's annotator name, or its annotation file when it has none."""
    name = (record.annotator or "").strip()
    return name or UNNAMED.format(getattr(record.path, "name", record.path))


def merge_annotators(records: Iterable) -> List["GoldCitance"]:
    """The citances of :func:`key_citances` (unkeyed records left out)."""
    return key_citances(records)[0]


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
