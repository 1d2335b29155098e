"""Functional alignment of two papers (paper appendix D).

For every sentence of paper A, the sentence of paper B whose rhetorical
function is most similar: cosine similarity of ``sent._.rhetoric_vector``
(set by the sentence encoder or a classifier with a vector head; the vectors are L2-normalised, so the
cosine is a dot product, searched by ``neighbours.cosine_neighbours``).

Papers may be given as

* any paper file the readers know, detected by content
  (``readers.papers.read_paper``: PDF, GROBID TEI, JATS, S2ORC JSON, plain
  text with its paragraphs and headings), or one sentence per non-empty line
  with ``lines=True``; CL-SciSumm reference-paper XML keeps its ``<S>``
  sentences, sids and sections as the sentence boundaries;
* ``.spacy`` DocBin: the Doc(s) of the file, their sentence boundaries kept
  (several Docs are concatenated into one paper);
* an already built ``Doc``.
"""
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy
from spacy.language import Language
from spacy.tokens import Doc, DocBin

from .. import extensions as ext
from ..capabilities import require_vectors
from ..errors import RhetoricError
from ..evaluation.neighbours import cosine_neighbours
from ..readers.common import sentence_splitters

PaperInput = Union[str, Path, Doc]


class AlignmentError(RhetoricError):
    """A paper that cannot be read or encoded (the message names the file)."""


@dataclass
class SentenceAlignment:
    """Sentence ``a_index`` of paper A and its best match ``b_index`` in paper B."""

    a_index: int
    a_sid: Optional[str]
    a_text: str
    b_index: int
    b_sid: Optional[str]
    b_text: str
    score: float
    rank: int = 1

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class EncodedPaper:
    """A paper's Doc, its sentence spans (in order) and their vectors [n, d]."""

    name: str
    doc: Doc
    sentences: List[Any]
    vectors: numpy.ndarray

    @property
    def sids(self) -> List[Optional[str]]:
        return [ext.get_span_value(s, ext.SID) for s in self.sentences]


def read_paper(path: Union[str, Path], nlp: Language, *, lines: bool = False) -> Doc:
    """Read one paper as a Doc in ``nlp.vocab`` (see the module docstring for
    the formats). Raises :class:`AlignmentError` naming the file."""
    from ..readers.clscisumm import read_reference_xml, reference_doc
    from ..readers.common import ReaderError, doc_from_sentences
    from ..readers.papers import detect_format
    from ..readers.papers import read_paper as read_any_paper

    path = Path(path)
    if not path.exists():
        raise AlignmentError(f"No such file: {path}")
    if path.suffix.lower() == ".spacy":
        try:
            docs = list(ext.docbin_docs(DocBin(store_user_data=True).from_disk(path), nlp.vocab))
        except Exception as err:  # noqa: BLE001 - name the file
            raise AlignmentError(f"{path}: cannot read as a .spacy DocBin: {err}") from err
        docs = [d for d in docs if len(d)]
        if not docs:
            raise AlignmentError(f"{path}: the DocBin holds no non-empty Doc")
        return docs[0] if len(docs) == 1 else Doc.from_docs(docs)
    if lines:
        try:
            text = path.read_text(encoding="utf8")
        except UnicodeDecodeError as err:
            raise AlignmentError(f"{path}: not UTF-8 text ({err})") from err
        sentences = [line.strip() for line in text.splitlines() if line.strip()]
        if not sentences:
            raise AlignmentError(f"{path}: no non-empty lines")
        return doc_from_sentences(nlp, sentences, doc_id=path.stem)
    try:
        fmt = detect_format(path, named=True)
        if fmt == "clscisumm":  # its <S> sentences, sids and sections kept
            paper = read_reference_xml(path)
            if not paper.sentences:
                raise AlignmentError(f"{path}: no <S> sentences in the reference XML")
            return reference_doc(nlp, paper)
        return read_any_paper(path, nlp, fmt=fmt, named=True)
    except ReaderError as err:
        raise AlignmentError(str(err)) from err


def check_pipeline(nlp: Language) -> None:
    require_vectors(nlp, AlignmentError, "alignment")


def encode_paper(nlp: Language, paper: PaperInput, *, lines: bool = False,
                 name: Optional[str] = None) -> EncodedPaper:
    """Run ``nlp`` over a paper and collect the vector of every sentence.

    Preset sentence boundaries (XML, .spacy, ``lines``) are kept: the
    pipeline's sentencizer/senter are disabled for such docs (the parser
    respects preset boundaries)."""
    check_pipeline(nlp)
    if isinstance(paper, Doc):
        doc, label = paper, name or str(ext.get_doc_value(paper, ext.DOC_ID) or "doc")
    else:
        doc, label = read_paper(paper, nlp, lines=lines), name or str(paper)
    preset = len(doc) > 0 and doc.has_annotation("SENT_START")
    disable = sentence_splitters(nlp) if preset else []
    with nlp.select_pipes(disable=disable):
        doc = nlp(doc)
    sentences = list(doc.sents) if len(doc) else []
    vectors, missing = [], []
    for i, sent in enumerate(sentences):
        vector = ext.get_span_value(sent, ext.VECTOR)
        if vector is None:
            missing.append(i)
        else:
            vectors.append(numpy.asarray(vector, dtype="float32"))
    if missing:
        raise AlignmentError(f"{label}: {len(missing)} of {len(sentences)} sentences got no rhetoric_vector "
                             f"(first: sentence {missing[0]})")
    if not sentences:
        raise AlignmentError(f"{label}: no sentences")
    return EncodedPaper(label, doc, sentences, numpy.vstack(vectors))


def align_papers(nlp: Language, paper_a: PaperInput, paper_b: PaperInput, *, k: int = 1,
                 lines: bool = False) -> List[SentenceAlignment]:
    """For every sentence of ``paper_a`` its ``k`` best matches in ``paper_b``
    (one :class:`SentenceAlignment` per pair, in A order then rank)."""
    a = encode_paper(nlp, paper_a, lines=lines)
    b = encode_paper(nlp, paper_b, lines=lines)
    return align_encoded(a, b, k=k)


def align_encoded(a: EncodedPaper, b: EncodedPaper, *, k: int = 1) -> List[SentenceAlignment]:
    """For every sentence of ``a`` its ``k`` most cosine-similar sentences of
    ``b`` (``neighbours.cosine_neighbours``: best first, ties by the lower
    index of B); ``k`` larger than B is capped to B's length."""
    if k < 1:
        raise AlignmentError(f"k must be at least 1, got {k}")
    indices, scores = cosine_neighbours(a.vectors, min(k, len(b.vectors)), b.vectors)
    a_sids, b_sids = a.sids, b.sids
    out = []
    for i, sent in enumerate(a.sentences):
        for rank, (j, score) in enumerate(zip(indices[i], scores[i]), start=1):
            j = int(j)
            out.append(SentenceAlignment(
                a_index=i, a_sid=a_sids[i], a_text=sent.text,
                b_index=j, b_sid=b_sids[j], b_text=b.sentences[j].text,
                score=float(score), rank=rank,
            ))
    return out


def alignment_summary(alignments: Sequence[SentenceAlignment]) -> Dict[str, float]:
    """Number of A sentences, their mean best score, and how many distinct B
    sentences are someone's best match."""
    best = [al for al in alignments if al.rank == 1]
    if not best:
        return {"n": 0, "mean_score": 0.0, "b_matched": 0}
    return {
        "n": len(best),
        "mean_score": float(numpy.mean([al.score for al in best])),
        "b_matched": len({al.b_index for al in best}),
    }
