"""CL-SciSumm topics for CitRet: selection, training pairs, Word2Vec text
and task 1a evaluation of a linker over topics."""
import time
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple, Union

from .evaluation import Task1aEvaluation, Task1aScore, key_citances
from .pairs import PairStats, PaperCitances, build_pairs, paper_citances_from_topic
from .text import preprocess

PathLike = Union[str, Path]


def training_pairs(topics: Sequence, *, seed: int = 0, progress: bool = True) -> Tuple[List, PairStats, Counter]:
    """CitRet pairs for ``topics`` (every topic's reference paper and all its
    annotation records). Returns ``(pairs, pair_stats, reader_counts)``."""
    from tqdm import tqdm

    counts: Counter = Counter()
    papers: List[PaperCitances] = []
    for topic in tqdm(topics, desc="reading topics", disable=not progress):
        papers.append(paper_citances_from_topic(topic, stats=counts))
    pairs, stats = build_pairs(papers, seed=seed)
    return pairs, stats, counts


def reference_token_sentences(topics: Sequence, *, progress: bool = True) -> Iterator[List[str]]:
    """Pre-processed sentences of every topic's reference paper (the
    Word2Vec training text)."""
    from tqdm import tqdm

    from ..readers.clscisumm import read_reference_xml

    for topic in tqdm(topics, desc="reading reference papers", disable=not progress):
        paper = read_reference_xml(topic.reference_xml)
        for sent in paper.sentences:
            toks = preprocess(sent.text)
            if toks:
                yield toks


def evaluate_topics(
    linker,
    vocab_or_nlp,
    topics: Sequence,
    *,
    k: int = 3,
    progress: bool = True,
) -> Dict:
    """Task 1a precision / recall / F1 of ``linker`` over ``topics`` with
    both protocols of :mod:`.evaluation` (``union`` and ``per_annotator``).

    Every topic's annotation records are merged per citance
    (``evaluation.key_citances``: the citing sentence, not the annotators'
    citance numbers). The result counts annotation records read, skipped as
    malformed and not keyed (no citation text or offsets), citances read,
    scored and skipped (by reason: an empty citation text), lists every scored citance (``"scored_citances"``:
    topic, citance number, citing article, predicted sids with scores, gold
    sids per annotator) and gives the wall time per scored citance (reference
    preparation included). The top-level P/R/F1 are the union protocol's."""
    from tqdm import tqdm

    from ..readers.clscisumm import read_reference_xml, read_topic_annotations, reference_doc
    from ..readers.common import ReadStats

    total = Task1aEvaluation()
    per_topic: Dict[str, Dict] = {}
    records_stats = ReadStats(name="annotation records")
    skipped: Counter = Counter()
    scored: List[Dict] = []
    n_read = 0
    n_unkeyed = 0
    seconds = 0.0
    for topic in tqdm(topics, desc="evaluating topics", disable=not progress):
        paper = read_reference_xml(topic.reference_xml)
        ref = reference_doc(vocab_or_nlp, paper)
        records, _ = read_topic_annotations(topic, stats=records_stats)
        score = Task1aScore()
        start = time.perf_counter()
        citances, unkeyed = key_citances(records)
        n_unkeyed += len(unkeyed)
        for cit in citances:
            n_read += 1
            if not cit.text:
                skipped["empty citation text"] += 1
                continue
            links = linker.link(cit.text, ref, k=k)
            predicted = [link["sid"] for link in links]
            score.add(predicted, cit.gold)
            total.add(cit, predicted)
            scored.append({
                "topic": cit.topic,
                "citance_number": cit.citance_number,
                "citing_article": cit.citing_article,
                "predicted": [{"sid": link["sid"], "score": link["score"]} for link in links],
                "gold": cit.gold_by_annotator,
            })
        seconds += time.perf_counter() - start
        per_topic[topic.topic_id] = score.to_dict()
    result = {
        **total.union.to_dict(),
        "protocols": {"union": total.union.to_dict(), "per_annotator": total.per_annotator()},
        "k": k,
        "topics": [t.topic_id for t in topics],
        "counts": {
            "records_read": records_stats.read,
            "records_malformed": records_stats.skipped,
            "malformed_examples": records_stats.examples,
            "records_unkeyed": n_unkeyed,
            "citances_read": n_read,
            "citances_scored": len(scored),
            "citances_skipped": sum(skipped.values()),
        },
        "skipped": dict(skipped),
        "per_topic": per_topic,
        "seconds": seconds,
        "seconds_per_citance": seconds / len(scored) if scored else None,
        "scored_citances": scored,
    }
    return result
