"""CL-SciSumm topics for CitRet: selection, training pairs, Word2Vec text
and task 1a evaluation of a linker over topics."""
import time
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from .evaluation import Task1aScore, merge_annotators
from .pairs import PairStats, PaperCitances, build_pairs, paper_citances_from_topic
from .text import preprocess

PathLike = Union[str, Path]


def select_topics(
    roots: Sequence[PathLike],
    *,
    include: Optional[Iterable[str]] = None,
    exclude: Optional[Iterable[str]] = None,
) -> List:
    """Topics under ``roots`` (see ``readers.clscisumm.iter_topics``), keeping
    only ids in ``include`` (when given) and dropping ids in ``exclude``.
    Unknown ids in ``include`` raise an error naming them."""
    from ..readers.clscisumm import iter_topics

    topics = [t for root in roots for t in iter_topics(root)]
    if include is not None:
        wanted = [t.strip() for t in include if t.strip()]
        have = {t.topic_id for t in topics}
        missing = [t for t in wanted if t not in have]
        if missing:
            raise ValueError(f"topics not found under {[str(r) for r in roots]}: {missing}")
        keep = set(wanted)
        topics = [t for t in topics if t.topic_id in keep]
    if exclude is not None:
        drop = {t.strip() for t in exclude}
        topics = [t for t in topics if t.topic_id not in drop]
    return topics


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
    """Task 1a precision / recall / F1 (micro, by sid overlap) of ``linker``
    over ``topics``; every topic's annotation files are merged per citance
    (union of annotators' gold sids, see :mod:`.evaluation`). Citances with
    an empty citation text are skipped and counted. Also reports the wall
    time per citance (reference preparation included)."""
    from tqdm import tqdm

    from ..readers.clscisumm import read_annotations, read_reference_xml, reference_doc

    total = Task1aScore()
    per_topic: Dict[str, Dict] = {}
    skipped: Counter = Counter()
    seconds = 0.0
    for topic in tqdm(topics, desc="evaluating topics", disable=not progress):
        paper = read_reference_xml(topic.reference_xml)
        ref = reference_doc(vocab_or_nlp, paper)
        records = []
        for path in topic.annotation_files:
            recs, n_bad = read_annotations(path, topic=topic.topic_id)
            records.extend(recs)
            if n_bad:
                skipped["malformed annotation lines"] += n_bad
        score = Task1aScore()
        start = time.perf_counter()
        for cit in merge_annotators(records):
            if not cit.text:
                skipped["empty citation text"] += 1
                continue
            links = linker.link(cit.text, ref, k=k)
            predicted = [link["sid"] for link in links]
            score.add(predicted, cit.gold)
            total.add(predicted, cit.gold)
        seconds += time.perf_counter() - start
        per_topic[topic.topic_id] = score.to_dict()
    result = total.to_dict()
    result.update(
        {
            "k": k,
            "topics": [t.topic_id for t in topics],
            "per_topic": per_topic,
            "skipped": dict(skipped),
            "seconds": seconds,
            "seconds_per_citance": seconds / total.citances if total.citances else None,
        }
    )
    return result
