"""Fine-tuning pairs of CitRet (§3.1.1).

For each citance, with the sentences of its reference paper (RP):

- (citance, cited sentence, 1.0) for each gold cited sentence found in the RP;
- (citance, random sentence of ANOTHER reference paper, 0.0) twice;
- (citance, random other (non-cited) sentence of the SAME RP, 0.3) twice.

Sampling is seeded (one ``random.Random(seed)`` for the whole build, papers
and citances in the given order), so the same inputs give the same pairs.
Citances that cannot give a positive pair are skipped and counted by reason.
"""
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

Pair = Tuple[str, str, float]


@dataclass
class PaperCitances:
    """One reference paper (sid -> sentence text, in document order) and the
    citance records that cite it (objects with ``citation_text`` and
    ``reference_offsets``, e.g. ``readers.clscisumm.CitanceRecord``)."""

    paper_id: str
    sentences: Dict[str, str]
    records: Sequence = ()


@dataclass
class PairStats:
    citances: int = 0  # records seen
    used: int = 0  # records that produced pairs
    skipped: Counter = field(default_factory=Counter)  # reason -> count
    pairs: Counter = field(default_factory=Counter)  # score -> count

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        text = (
            f"{self.citances} citances: {self.used} used, {self.n_skipped} skipped; "
            + ", ".join(f"{n} pairs at {s}" for s, n in sorted(self.pairs.items(), reverse=True))
        )
        if self.skipped:
            text += " (skipped: " + ", ".join(f"{r} x{n}" for r, n in self.skipped.most_common()) + ")"
        return text


def build_pairs(
    papers: Sequence[PaperCitances],
    *,
    seed: int = 0,
    n_other: int = 2,
    n_same: int = 2,
    positive: float = 1.0,
    same_paper: float = 0.3,
    other_paper: float = 0.0,
) -> Tuple[List[Pair], PairStats]:
    """The CitRet training pairs for ``papers`` (see the module docstring).

    Returns ``(pairs, stats)`` with ``stats.citances == stats.used +
    stats.n_skipped``. Random sentences of other papers are drawn from the
    other entries of ``papers`` (no other-paper pairs when there is only one).
    """
    rng = random.Random(seed)
    stats = PairStats()
    pairs: List[Pair] = []
    texts_by_paper = [[t for t in p.sentences.values() if t.strip()] for p in papers]
    for pi, paper in enumerate(papers):
        others = [j for j in range(len(papers)) if j != pi and texts_by_paper[j]]
        for rec in paper.records:
            stats.citances += 1
            citance = (rec.citation_text or "").strip()
            if not citance:
                stats.skipped["empty citation text"] += 1
                continue
            gold = [str(s).strip() for s in rec.reference_offsets]
            gold_in = [s for s in dict.fromkeys(gold) if s in paper.sentences and paper.sentences[s].strip()]
            if not gold_in:
                stats.skipped["no gold sentence in the reference paper"] += 1
                continue
            stats.used += 1
            for sid in gold_in:
                pairs.append((citance, paper.sentences[sid], positive))
                stats.pairs[positive] += 1
            for _ in range(n_other if others else 0):
                j = rng.choice(others)
                pairs.append((citance, rng.choice(texts_by_paper[j]), other_paper))
                stats.pairs[other_paper] += 1
            gold_set = set(gold_in)
            rest = [s for s, t in paper.sentences.items() if s not in gold_set and t.strip()]
            for sid in rng.sample(rest, min(n_same, len(rest))):
                pairs.append((citance, paper.sentences[sid], same_paper))
                stats.pairs[same_paper] += 1
    return pairs, stats


def paper_citances_from_topic(topic, *, stats: Optional[Counter] = None) -> PaperCitances:
    """Read one CL-SciSumm topic (``readers.clscisumm.Topic``) into a
    :class:`PaperCitances`; all its annotation files' records are kept.
    Malformed annotation lines are skipped by the reader and counted in
    ``stats["malformed annotation lines"]``."""
    from ..readers.clscisumm import read_reference_xml, read_topic_annotations

    paper = read_reference_xml(topic.reference_xml)
    records, n_skipped = read_topic_annotations(topic)
    if stats is not None and n_skipped:
        stats["malformed annotation lines"] += n_skipped
    sentences = {s.sid: s.text for s in paper.sentences}
    return PaperCitances(topic.topic_id, sentences, records)
