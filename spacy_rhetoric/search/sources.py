"""The corpora a search index reads (``.spacy``, label JSONL, paper files) and their
encoding with a pipeline: papers -> sentence rows + vectors."""
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy

from .. import extensions as ext
from ..apps.records import doc_records
from ..capabilities import require_vectors, vector_only_disabled
from ..errors import RhetoricError
from ..io import check_input, path_text

PathLike = Union[str, Path]


class SearchIndexError(RhetoricError):
    """An index, corpus or query that cannot be used (the message names it)."""


def corpus_files(paths: Iterable[PathLike]) -> List[Path]:
    """The files named in ``paths`` and those below the folders (sorted,
    recursive, hidden files left out); a clear error for a missing path."""
    return [path for _, path in keyed_corpus_files(paths)]


def keyed_corpus_files(paths: Iterable[PathLike]) -> List[Tuple[str, Path]]:
    """``(key, path)`` of :func:`corpus_files`: the key is the path relative
    to the folder given (``readers.papers.keyed_paper_files``)."""
    from ..readers.papers import keyed_paper_files

    paths = list(paths)
    for path in paths:
        check_input(path, what="corpus", dir_ok=True)
    files = keyed_paper_files(paths)
    if not files:
        raise SearchIndexError(f"no files found in {', '.join(str(p) for p in paths)}")
    return files


def _sentence(text: str, **values: Any) -> Dict[str, Any]:
    out = {"text": " ".join(str(text).split())}
    out.update({k: (None if v is None else str(v)) for k, v in values.items()})
    return out


def doc_paper(doc, default_id: str, key: Optional[str] = None) -> Dict[str, Any]:
    """A Doc (from a DocBin or a paper reader) as a plain paper record: its id
    and its sentences with gold label, section, heading and sid."""
    paper_id = ext.get_doc_value(doc, ext.DOC_ID) or default_id
    out = [_sentence(rec["text"], gold_label=rec["label"], section=rec["section"], heading=rec["heading"],
                     sid=rec["sid"]) for rec in doc_records(doc, skip_blank=True)]
    return {"paper": str(paper_id), "input": key, "sentences": out}


def _jsonl_papers(path: Path, stats, key: str = "") -> Iterator[Dict[str, Any]]:
    """Label JSONL: consecutive lines of one paper id are one paper."""
    from ..readers.common import ReaderError, iter_jsonl

    current: Optional[Dict[str, Any]] = None
    for line, rec in iter_jsonl(path, errors="skip", stats=stats):
        text = rec.get("text", rec.get("sentence"))
        if not isinstance(text, str) or not text.strip():
            stats.skip(ReaderError(path, line, "no non-empty string field 'text'", field="text"))
            continue
        stats.used += 1
        paper_id = str(rec.get("paper_id", rec.get("doc_id", rec.get("id", path_text(path.stem)))))
        if current is None or current["paper"] != paper_id:
            if current is not None:
                yield current
            current = {"paper": paper_id, "input": key or path_text(path), "sentences": []}
        current["sentences"].append(_sentence(text, gold_label=rec.get("label"), section=rec.get("section"),
                                              heading=rec.get("heading"), sid=rec.get("sid")))
    if current is not None:
        yield current


def iter_corpus(paths: Iterable[PathLike], vocab_nlp, stats=None,
                read_timeout: Optional[float] = None) -> Iterator[Dict[str, Any]]:
    """Plain paper records (``paper``, ``input``, ``sentences``) from
    ``.spacy``, label ``.jsonl`` and paper files (``readers.papers.read_paper``,
    any format it detects). ``input`` is the file's key (its path relative to
    the folder given); a paper file's id is unique in the corpus
    (``readers.papers.paper_ids``). Unreadable files and records are skipped
    and counted in ``stats`` (a ``readers.common.ReadStats``), a paper file
    whose reading takes longer than ``read_timeout`` seconds too (None: the
    default of ``readers.budget``)."""
    from spacy.tokens import DocBin

    from ..readers.common import ReaderError, ReadStats
    from ..readers.papers import paper_ids, read_paper

    stats = stats if stats is not None else ReadStats(name="corpus files")
    files = keyed_corpus_files(paths)
    ids = paper_ids([key for key, _ in files])
    for key, path in files:
        suffix = path.suffix.lower()
        try:
            if suffix == ".jsonl":
                papers = list(_jsonl_papers(path, stats, key))
            else:
                stats.read += 1
                if suffix == ".spacy":
                    try:
                        docs = list(ext.docbin_docs(DocBin(store_user_data=True).from_disk(path), vocab_nlp.vocab))
                    except Exception as err:  # noqa: BLE001 - name the file
                        raise ReaderError(path, None, f"cannot read as a .spacy DocBin: {err}") from err
                    papers = [doc_paper(d, f"{path_text(path.stem)}:{i}", key) for i, d in enumerate(docs) if len(d)]
                else:
                    timeout = {} if read_timeout is None else {"read_timeout": read_timeout}
                    papers = [doc_paper(read_paper(path, vocab_nlp, doc_id=ids[key], **timeout), ids[key], key)]
                stats.used += 1
        except ReaderError as err:
            stats.skip(err)
            continue
        except (OSError, UnicodeDecodeError) as err:
            stats.skip(ReaderError(path, None, f"cannot read: {err}"))
            continue
        for paper in papers:
            if paper["sentences"]:
                stats.docs += 1
                stats.sentences += len(paper["sentences"])
                yield paper


def iter_parts(papers: Iterable[Dict[str, Any]], part_sentences: int) -> Iterator[List[Dict[str, Any]]]:
    """Consecutive papers in groups of at least ``part_sentences`` sentences
    (the last group may be smaller); a paper is never cut."""
    part: List[Dict[str, Any]] = []
    size = 0
    for paper in papers:
        part.append(paper)
        size += len(paper["sentences"])
        if size >= part_sentences:
            yield part
            part, size = [], 0
    if part:
        yield part


def check_pipeline(nlp) -> None:
    require_vectors(nlp, SearchIndexError, "search")


def not_for_vectors(nlp) -> List[str]:
    """The components a query's vector does not need (disabled for queries)."""
    return vector_only_disabled(nlp)


def load_pipeline(model: PathLike):
    """``spacy.load`` with a clear error, checked for an encoder."""
    import spacy

    import spacy_rhetoric  # noqa: F401 - factories and extensions

    try:
        nlp = spacy.load(model)
    except (OSError, IOError) as err:
        raise SearchIndexError(f"cannot load pipeline {str(model)!r}: {err}") from err
    check_pipeline(nlp)
    return nlp


def paper_doc(nlp, paper: Dict[str, Any]):
    """The Doc of a paper record: its sentences as preset boundaries, sections,
    headings, sids and doc id as extension values (gold labels are kept apart)."""
    from ..readers.common import doc_from_sentences

    sents = paper["sentences"]
    doc = doc_from_sentences(nlp, [s["text"] for s in sents], sections=[s.get("section") for s in sents],
                             sids=[s.get("sid") for s in sents], doc_id=paper["paper"])
    ext.set_span_values(doc, ext.HEADING, list(doc.sents), [s.get("heading") for s in sents])
    return doc


def sentence_rows(doc, gold: Optional[Sequence[Optional[str]]] = None) -> Tuple[numpy.ndarray, List[Dict[str, Any]]]:
    """The vectors ``[n, d]`` and metadata rows of an annotated Doc's
    sentences; sentences without a vector (whitespace only) are left out."""
    vectors, rows = [], []
    for rec in doc_records(doc, vector=True):
        if rec["vector"] is None:
            continue
        gold_label = gold[rec["index"]] if gold is not None else None
        rows.append({
            "paper": rec["paper_id"], "sent_index": rec["index"], "section": rec["section"] or rec["heading"],
            "heading": rec["heading"], "sid": rec["sid"], "text": rec["text"],
            "label": rec["label"] if rec["label"] is not None else gold_label, "fine_label": rec["fine_label"],
            "gold_label": gold_label, "phrase_label": rec["phrase_label"], "scores": rec["scores"] or {},
            "fine_scores": rec["fine_scores"] or {}, "input": None,
        })
        vectors.append(rec["vector"])
    matrix = numpy.vstack(vectors).astype("float32") if vectors else numpy.zeros((0, 0), "float32")
    return matrix, rows


def encode_papers(nlp, papers: Sequence[Dict[str, Any]], *, batch_size: int = 16, n_process: int = 1
                  ) -> Tuple[numpy.ndarray, List[Dict[str, Any]]]:
    """Run ``nlp`` over paper records (preset boundaries kept: sentence
    splitters disabled) and collect every sentence's vector and row (with
    the paper's ``input``, the corpus file it came from); ``n_process``
    worker processes for ``nlp.pipe`` (papers too long for one pass are run
    in pieces in this process)."""
    from ..long_docs import is_long_doc, process_long_doc
    from ..readers.common import sentence_splitters

    docs = [paper_doc(nlp, p) for p in papers]
    golds = [[s.get("gold_label") for s in p["sentences"]] for p in papers]
    matrices, rows = [], []
    splitters = sentence_splitters(nlp)
    short = [d for d in docs if not is_long_doc(nlp, d)]
    done = iter(nlp.pipe(short, batch_size=batch_size, disable=splitters,
                         n_process=min(n_process, max(1, len(short)))))
    # a long paper in pieces of whole sentences (long_docs.long_threshold)
    annotated = (process_long_doc(nlp, d, disable=splitters) if is_long_doc(nlp, d) else next(done) for d in docs)
    for doc, gold, paper in zip(annotated, golds, papers):
        matrix, doc_rows = sentence_rows(doc, gold)
        for row in doc_rows:
            row["input"] = paper.get("input")
        if doc_rows:
            matrices.append(matrix)
            rows.extend(doc_rows)
    if not rows:
        return numpy.zeros((0, 0), "float32"), []
    return numpy.vstack(matrices), rows
