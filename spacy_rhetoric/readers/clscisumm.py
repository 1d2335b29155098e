"""CL-SciSumm (Task 1a/1b) reader: the public names of its modules, and the
corpus reader of the reference papers (:func:`read_reference_docs`).

Layout of one topic directory (``<TOPIC>/``)::

    Reference_XML/<TOPIC>.xml         reference paper (RP), one <S sid=.. ssid=..> per sentence
    Citance_XML/<CP>.xml              citing papers (manual topics only); a few are
                                      plain text ``<CP>word.docx.txt`` instead
    annotation/<TOPIC>.ann.txt        one record per citance, fields joined by " | "
      (or .annv3.txt; older releases: .csv with a header row of the same names)
    citing_sentences.json             ScisummNet (auto) topics only

By concern: ``clscisumm_reference`` (reference papers), ``clscisumm_annotations``
(annotation records, citing sentences), ``clscisumm_topics`` (topic
directories), ``clscisumm_facets`` (reference papers labelled by the facets of
their citances). Quirks handled (see ../shared/data/README.md):

* RP XML files mixing UTF-8 with stray cp1252 bytes (decoded byte by byte),
  ``<SUBSECTION>`` headings inside sections, sentences directly under
  ``<PAPER>`` (no abstract), empty ``<S>`` elements (dropped and counted in
  ``ReferencePaper.n_empty``). XML that is still not well-formed raises a
  :class:`~spacy_rhetoric.readers.common.ReaderError` naming file and line.
* Annotation records: the line is split only at the known field names
  (``| Citation Text:`` ...), so a ``|`` inside a text is kept; stray spaces
  around keys and values; duplicated trailing fields (the first value wins);
  a missing ``Annotator`` (None); ``NA`` offsets (empty list); facets spelled
  ``Method_Citation``, ``Method citation``, ``Result_Citation``,
  ``['Aim_Citation','Method_Citation']`` ... normalised to lists of
  ``method, results, implication, aim, hypothesis``. A record missing a
  required field (citance number, articles, reference offsets) is skipped and
  counted.
"""
from pathlib import Path
from typing import Iterator, Optional, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from .clscisumm_annotations import (
    FACETS,
    FIELDS,
    REQUIRED,
    CitanceRecord,
    annotation_topic,
    normalise_facets,
    parse_offsets,
    read_annotations,
    read_citing_sentences,
    split_fields,
    strip_sentence_tags,
)
from .clscisumm_facets import (
    FACET_COARSE,
    FACET_SOURCE,
    FRONT_SECTIONS,
    OWN,
    cites_others,
    facet_doc,
    facet_labels,
    read_facet_docs,
)
from .clscisumm_reference import (
    ABSTRACT,
    TITLE,
    ReferencePaper,
    RefSentence,
    decode_mixed,
    normalise_space,
    read_reference_xml,
    reference_doc,
)
from .clscisumm_topics import Topic, citing_paper_path, iter_topics, read_topic_annotations, select_topics
from .common import ReaderError, ReadStats, check_errors_mode

__all__ = [
    "ABSTRACT", "FACETS", "FACET_COARSE", "FACET_SOURCE", "FIELDS", "FRONT_SECTIONS", "OWN", "REQUIRED", "TITLE",
    "CitanceRecord", "RefSentence", "ReferencePaper", "Topic", "annotation_topic", "cites_others",
    "citing_paper_path", "decode_mixed", "facet_doc", "facet_labels", "iter_topics", "normalise_facets",
    "normalise_space", "parse_offsets", "read_annotations", "read_citing_sentences", "read_facet_docs",
    "read_reference_docs", "read_reference_xml", "read_topic_annotations", "reference_doc", "select_topics",
    "split_fields", "strip_sentence_tags",
]


def read_reference_docs(
    root: Union[str, Path],
    nlp_or_vocab: Union[Language, Vocab],
    *,
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
) -> Iterator[Doc]:
    """One Doc per topic's reference paper (sentences, sids, sections, doc id).

    A reference XML that cannot be parsed is skipped and counted
    (``errors="skip"``) or raises its ReaderError; empty ``<S>`` elements are
    counted in ``stats.reasons`` (they are not records of their own).
    """
    check_errors_mode(errors)
    stats = stats if stats is not None else ReadStats(name=str(root))
    for topic in iter_topics(root):
        stats.read += 1
        try:
            paper = read_reference_xml(topic.reference_xml)
            if not paper.sentences:
                raise ReaderError(topic.reference_xml, None, "no sentences")
        except ReaderError as err:
            if errors == "raise":
                raise
            stats.skip(err)
            continue
        if paper.n_empty:
            stats.notes["empty <S> dropped"] += paper.n_empty
        stats.used += 1
        stats.docs += 1
        stats.sentences += len(paper.sentences)
        yield reference_doc(nlp_or_vocab, paper)
        if limit > 0 and stats.docs >= limit:
            return
