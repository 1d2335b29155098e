"""PMC-Sents-FULL (Bartz Guedes & da Silva 2023), JSON lines with one
sentence per line: ``id`` (PMC article id), ``sentence`` (lower-cased),
``label`` (section-derived: other, objective, methods, results, background)
and ``label_id``.

One Doc per article, its sentences in file order, the article id as doc id.
The released dev split is a sentence-level sample in random order (17,309
lines form 17,300 runs of equal ids), so ``group_by="article"`` (default)
collects all lines of an id wherever they occur; the order of an article's
sentences is the file order, not necessarily the order in the paper.
``group_by="consecutive"`` groups runs of equal ids only, ``"sentence"``
makes one Doc per line.
"""
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from ..errors import RhetoricError
from .common import ReaderError, ReadStats, check_errors_mode, doc_from_sentences, handle, iter_jsonl, require

LABELS = ("other", "objective", "methods", "results", "background")
LABEL_IDS = {i: label for i, label in enumerate(LABELS)}  # see the data README
GROUPINGS = ("article", "consecutive", "sentence")


def read_pmc_sents(
    path: Union[str, Path],
    nlp_or_vocab: Union[Language, Vocab],
    *,
    group_by: str = "article",
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
) -> Iterator[Doc]:
    """Yield one Doc per article (see the module docstring for ``group_by``).

    A line without ``id`` or ``sentence``, with an empty sentence, or without
    a usable ``label`` (a string, or an integer ``label_id``) is skipped and
    counted (``errors="skip"``) or raises a ReaderError naming file and line.
    ``limit`` > 0 stops after that many Docs.
    """
    check_errors_mode(errors)
    if group_by not in GROUPINGS:
        raise RhetoricError(f"group_by must be one of {GROUPINGS}, got {group_by!r}")
    path = Path(path)
    stats = stats if stats is not None else ReadStats(name=str(path))
    groups: Dict[str, List[Tuple[int, str, str]]] = {}
    run: List[Tuple[int, str, str]] = []
    run_id: Optional[str] = None

    def make(article: str, rows: List[Tuple[int, str, str]]) -> Doc:
        stats.docs += 1
        stats.sentences += len(rows)
        doc_id = article if group_by != "sentence" else f"{article}:{rows[0][0]}"
        return doc_from_sentences(nlp_or_vocab, [r[1] for r in rows], labels=[r[2] for r in rows],
                                  doc_id=doc_id)

    def done() -> bool:
        return limit > 0 and stats.docs >= limit

    for line, record in iter_jsonl(path, errors=errors, stats=stats):
        try:
            article = str(require(record, "id", path, line, (str, int))).strip()
            sentence = require(record, "sentence", path, line, str).strip()
            if not article:
                raise ReaderError(path, line, "empty article id", field="id")
            if not sentence:
                raise ReaderError(path, line, "empty sentence", field="sentence")
            label = record.get("label")
            if label is None and isinstance(record.get("label_id"), int):
                label = LABEL_IDS.get(record["label_id"])
            if not isinstance(label, str) or not label:
                raise ReaderError(path, line, "missing or invalid label", field="label")
        except ReaderError as err:
            handle(err, errors, stats)
            continue
        stats.used += 1
        row = (line, sentence, label)
        if group_by == "sentence":
            yield make(article, [row])
        elif group_by == "consecutive":
            if run and article != run_id:
                yield make(run_id, run)
                run = []
            run_id = article
            run.append(row)
        else:
            groups.setdefault(article, []).append(row)
        if done():
            return
    if group_by == "consecutive" and run and not done():
        yield make(run_id, run)
    for article, rows in groups.items():
        if done():
            return
        yield make(article, rows)
