"""CL-SciSumm reference papers labelled by the discourse facets of the
citances that cite them (task 1a annotations): a cited sentence's facets ->
acceptable coarse labels (:func:`facet_labels`), a related-work section's
sentences and the front matter's sentences that cite other work as
background; one Doc per manually annotated topic (:func:`read_facet_docs`).
Part of the CL-SciSumm reader (``readers.clscisumm``)."""
import re
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from ..section_headings import RELATED_WORK, rule_category
from .clscisumm_annotations import FACETS
from .clscisumm_reference import ABSTRACT, TITLE, ReferencePaper, read_reference_xml
from .clscisumm_topics import iter_topics, read_topic_annotations
from .common import ReaderError, ReadStats, doc_from_sentences
from .fulltext import CITATION

FACET_SOURCE = "cl-scisumm"  # doc._.rhetoric_source of the facet-labelled papers
# Discourse facet of a cited span -> acceptable coarse labels, the primary one first. A span cited for its
# method describes the reference paper's own work; in the abstract or introduction such a sentence often
# states the aim ("We present a parser that ..."), so there objective is accepted too.
FACET_COARSE = {
    "method": ("method",), "results": ("result",), "implication": ("result", "other"),
    "aim": ("objective",), "hypothesis": ("objective",),
}
# Heading categories (section_headings.rule_category) where a cited method may state the aim, and a citing
# sentence that does not speak of the paper is background; a related-work section's sentences are background.
FRONT_SECTIONS = ("abstract", "introduction")
# In the abstract or the introduction, a sentence that cites (fulltext.CITATION: "(Melamed, 1997)", "Brown et al.
# (1993)", "[3]") and does not speak of the paper itself ("we", "our", "this paper") is taken as background
OWN = re.compile(r"\b(?:we|our|us|this paper|this work|this article|here)\b", re.IGNORECASE)


def facet_labels(facets: Sequence[str], section: Optional[str]) -> List[str]:
    """The acceptable coarse labels of a reference-paper sentence cited with
    ``facets`` (one per citance that cites it, repeats counted): the most
    frequent facet's labels first (ties: ``FACETS`` order), then the others';
    ``[]`` without a known facet."""
    counts: Dict[str, int] = {}
    for facet in facets:
        if facet in FACET_COARSE:
            counts[facet] = counts.get(facet, 0) + 1
    order = sorted(counts, key=lambda f: (-counts[f], FACETS.index(f)))
    labels: List[str] = []
    for facet in order:
        for label in FACET_COARSE[facet]:
            if label not in labels:
                labels.append(label)
    if labels and labels[0] == "method" and rule_category(section) in FRONT_SECTIONS and "objective" not in labels:
        labels.append("objective")
    return labels


def cites_others(text: str) -> bool:
    """A sentence with a citation that does not speak of the paper itself
    (``fulltext.CITATION``, ``OWN``)."""
    return bool(CITATION.search(text)) and not OWN.search(text)


def facet_doc(nlp_or_vocab: Union[Language, Vocab], paper: ReferencePaper,
              facets: Dict[str, List[str]]) -> Doc:
    """The reference paper as one Doc (title kept as ``doc._.rhetoric_title``,
    not a sentence; each sentence's section title as its heading) whose
    sentences cited in a task-1a annotation carry gold coarse labels from
    their discourse facets (``facet_labels``; ``facets``: sid -> the facets of
    the citances citing it); the sentences of a related-work section (its
    heading's ``section_headings.rule_category``) are background, cited or
    not, and so are the abstract's and introduction's sentences that cite
    other work without a facet (``cites_others``); every other sentence is
    unlabelled."""
    from .. import extensions
    from ..extensions import GOLD_LABELS, HEADING

    sents = [s for s in paper.sentences if s.section != TITLE]
    golds = []
    for s in sents:
        category = rule_category(s.section)
        gold = ["background"] if category == RELATED_WORK else facet_labels(facets.get(s.sid, ()), s.section)
        if not gold and category in FRONT_SECTIONS and cites_others(s.text):
            gold = ["background"]
        golds.append(gold)
    doc = doc_from_sentences(nlp_or_vocab, [s.text for s in sents], labels=[g[0] if g else None for g in golds],
                             sids=[s.sid for s in sents], doc_id=paper.paper_id)
    spans = list(doc.sents)
    extensions.set_span_values(doc, GOLD_LABELS, spans, [g or None for g in golds])
    extensions.set_span_values(doc, HEADING, spans,
                               ["Abstract" if s.section == ABSTRACT else s.section for s in sents])
    if paper.title:
        extensions.set_doc_value(doc, extensions.TITLE, paper.title)
    extensions.set_doc_value(doc, extensions.SOURCE, FACET_SOURCE)
    return doc


def read_facet_docs(root: Union[str, Path], nlp_or_vocab: Union[Language, Vocab], *,
                    topics: Optional[Sequence[str]] = None,
                    stats: Optional[ReadStats] = None) -> Iterator[Doc]:
    """One ``facet_doc`` per manually annotated topic under ``root`` (the
    ScisummNet topics, whose facets are ``NA``, are left out; ``topics``:
    only these topic ids). A reference XML that cannot be read, or a topic
    without a faceted citance, is skipped and counted in ``stats``."""
    stats = stats if stats is not None else ReadStats(name=str(root))
    wanted = set(topics) if topics is not None else None
    for topic in iter_topics(root):
        if topic.auto or (wanted is not None and topic.topic_id not in wanted):
            continue
        stats.read += 1
        try:
            paper = read_reference_xml(topic.reference_xml)
        except ReaderError as err:
            stats.skip(err)
            continue
        records, _ = read_topic_annotations(topic, stats=stats)
        facets: Dict[str, List[str]] = {}
        for rec in records:
            for sid in rec.reference_offsets:
                facets.setdefault(sid, []).extend(rec.facets)
        if not any(facet_labels(f, None) for f in facets.values()):
            stats.skip(ReaderError(topic.reference_xml, None, "no cited sentence with a discourse facet"))
            continue
        doc = facet_doc(nlp_or_vocab, paper, facets)
        stats.used += 1
        stats.docs += 1
        stats.sentences += len(paper.sentences)
        yield doc
