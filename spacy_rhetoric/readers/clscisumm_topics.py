"""CL-SciSumm topics: the directories of the corpus (``<TOPIC>/``:
``Reference_XML/``, ``Citance_XML/``, ``annotation/``,
``citing_sentences.json``) as :class:`Topic` s, found under a root
(:func:`iter_topics`, :func:`select_topics`), with each topic's annotation
records (:func:`read_topic_annotations`) and citing papers
(:func:`citing_paper_path`). Part of the CL-SciSumm reader (``readers.clscisumm``)."""
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ..errors import RhetoricError
from .clscisumm_annotations import CitanceRecord, read_annotations
from .common import ReaderError, ReadStats


@dataclass
class Topic:
    topic_id: str
    root: Path
    reference_xml: Path
    annotation_files: List[Path]
    citance_dir: Optional[Path]
    citing_sentences_json: Optional[Path]
    auto: bool  # ScisummNet automatically annotated topic


def read_topic_annotations(topic: Topic, *, stats: Optional[ReadStats] = None
                           ) -> Tuple[List[CitanceRecord], int]:
    """All records of all annotation files of ``topic`` (their topic is the
    topic directory's id) and the number of malformed records skipped."""
    records: List[CitanceRecord] = []
    skipped = 0
    for path in topic.annotation_files:
        recs, n_bad = read_annotations(path, topic=topic.topic_id, stats=stats)
        records.extend(recs)
        skipped += n_bad
    return records, skipped


def citing_paper_path(topic: Topic, citing_article: str) -> Optional[Path]:
    """The citing paper's file in ``Citance_XML``: ``<CP>.xml`` or, for a few
    papers, the plain-text ``<CP>word.docx.txt``; None when absent."""
    if topic.citance_dir is None:
        return None
    for name in (f"{citing_article}.xml", f"{citing_article}word.docx.txt"):
        candidate = topic.citance_dir / name
        if candidate.exists():
            return candidate
    return None


def _topic_from_dir(path: Path) -> Topic:
    topic_id = path.name
    ref_dir = path / "Reference_XML"
    reference = ref_dir / f"{topic_id}.xml"
    if not reference.exists():
        candidates = sorted(ref_dir.glob("*.xml"))
        if len(candidates) != 1:
            raise ReaderError(ref_dir, None, f"expected {topic_id}.xml (found {len(candidates)} XML files)")
        reference = candidates[0]
    ann_dir = path / "annotation"
    annotations = sorted(
        p for p in ann_dir.iterdir()
        if re.search(r"\.ann[^.]*\.txt$|\.csv$", p.name, re.IGNORECASE)
    ) if ann_dir.exists() else []
    citance_dir = path / "Citance_XML"
    citing_json = path / "citing_sentences.json"
    has_json = citing_json.exists()
    return Topic(
        topic_id=topic_id,
        root=path,
        reference_xml=reference,
        annotation_files=annotations,
        citance_dir=citance_dir if citance_dir.exists() else None,
        citing_sentences_json=citing_json if has_json else None,
        auto=has_json or "scisummnet" in str(path).lower(),
    )


def iter_topics(root: Union[str, Path]) -> Iterator[Topic]:
    """Topics under ``root`` in sorted order: ``root`` may be one topic
    directory, a directory of topics (training-40-manual,
    scisummnet-2019-auto) or a directory of such directories (cl-scisumm/)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"No such directory: {root}")
    if (root / "Reference_XML").is_dir():
        yield _topic_from_dir(root)
        return
    for child in sorted(p for p in root.iterdir() if p.is_dir()):
        if (child / "Reference_XML").is_dir():
            yield _topic_from_dir(child)
        else:
            for grandchild in sorted(p for p in child.iterdir() if p.is_dir()):
                if (grandchild / "Reference_XML").is_dir():
                    yield _topic_from_dir(grandchild)


def select_topics(
    roots: Sequence[Union[str, Path]],
    *,
    include: Optional[Iterable[str]] = None,
    exclude: Optional[Iterable[str]] = None,
) -> List[Topic]:
    """Topics under ``roots`` (see ``iter_topics``), keeping
    only ids in ``include`` (when given) and dropping ids in ``exclude``.
    Unknown ids in ``include`` raise an error naming them."""
    topics = [t for root in roots for t in iter_topics(root)]
    if include is not None:
        wanted = [t.strip() for t in include if t.strip()]
        have = {t.topic_id for t in topics}
        missing = [t for t in wanted if t not in have]
        if missing:
            raise RhetoricError(f"topics not found under {[str(r) for r in roots]}: {missing}")
        keep = set(wanted)
        topics = [t for t in topics if t.topic_id in keep]
    if exclude is not None:
        drop = {t.strip() for t in exclude}
        topics = [t for t in topics if t.topic_id not in drop]
    return topics
