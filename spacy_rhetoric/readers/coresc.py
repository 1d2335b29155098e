"""ART / CoreSC (Liakata et al. 2010, 2012): chemistry and biochemistry papers
of the Royal Society of Chemistry whose every sentence carries one of the 11
CoreSC concepts (``../shared/data/coresc-art/``: one XML file per paper,
``ann1``..``ann9/*_mode2.xml``; licence CC BY-NC).

Format: ``<PAPER><mode2 name=ID/><TITLE><s>…</s></TITLE><ABSTRACT><s>…</s>…
</ABSTRACT><BODY><DIV DEPTH="1"><HEADER>…</HEADER><P><s sid="7">
<annotationART type="Bac" novelty="None" …>text with <REF TYPE="P"
ID="cit1">1</REF> and <SB>/<IT> markup</annotationART></s>…</P>
<DIV DEPTH="2">…</DIV></DIV></BODY></PAPER>``.

One Doc per paper, read as a paper reader reads a paper:

* every ``<s>`` of the abstract and the body, in document order, is one
  sentence of the Doc (its text: the text of the ``<s>`` with inline markup
  flattened and whitespace collapsed); text outside ``<s>`` (a handful of
  unannotated fragments) and empty sentences are left out (counted in the
  summary's notes); the title is not in the Doc's text but is
  ``doc._.rhetoric_title``, as for the other paper readers;
* ``sent._.rhetoric_heading``: ``"Abstract"`` for the abstract; in the body,
  the heading of the innermost ``DIV`` with a non-empty ``HEADER``, numbered
  by its place among the headed sections (``"2 Experimental"``,
  ``"2.1 Synthesis"``). The source drops the printed numbers; numbering from
  the ``DIV`` tree keeps the nesting, so the section tagger files an
  unmatched sub-heading under its parent's category as it does for numbered
  papers. An unheaded first section (the introduction of 36 papers) has no
  heading, like text before the first heading in the other readers;
* ``sent._.rhetoric_paragraph``: the paper's paragraph (``P``) index, the
  abstract being paragraph 0;
* citations ``<REF TYPE="P" ID="cit1 cit2">`` as the span group
  ``doc.spans["citations"]`` (label ``"bibr"``, the ids as ``kb_id_``), as in
  ``readers.fulltext``;
* ``doc._.rhetoric_doc_id``: the ``mode2`` name (the file stem without
  ``_mode2`` otherwise).

Gold labels. The fine label (field ``fine_label``) is the concept's full
name (:data:`CONCEPTS`). The coarse labels group the concepts as Brack et al.
(2022) do (:data:`COARSE`): Bac -> background; Hyp, Goa, Obj -> objective;
Exp, Mod, Met -> method; Obs, Res -> result; Con -> result or other (as a
MuLMS-AZ conclusion, ``readers.mulms.ACCEPTED_FOR``); Mot -> background or
objective; Exp, Mod, Met whose ``novelty`` is ``"Old"`` (a method of earlier
work) -> method or background. As for MuLMS-AZ, ``sent._.rhetoric_gold_labels``
holds every acceptable label and ``label`` the first of them (the concept's
own group: an earlier method is still a method; Motivation -> background).
"""
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from .. import extensions
from ..extensions import FINE_LABEL, GOLD_LABELS, HEADING, PARAGRAPH
from .common import ReaderError, ReadStats, check_errors_mode, doc_from_sentences, handle, suffix_files
from .fulltext import ParagraphWalk, local_name, norm_space, parse_xml, set_citation_spans

ABSTRACT_HEADING = "Abstract"
CONCEPTS = {
    "Bac": "Background", "Mot": "Motivation", "Hyp": "Hypothesis", "Goa": "Goal", "Obj": "Object",
    "Mod": "Model", "Exp": "Experiment", "Met": "Method", "Obs": "Observation", "Res": "Result",
    "Con": "Conclusion",
}
# CoreSC concept -> acceptable coarse labels, the primary one first
COARSE = {
    "Bac": ("background",), "Mot": ("background", "objective"),
    "Hyp": ("objective",), "Goa": ("objective",), "Obj": ("objective",),
    "Exp": ("method",), "Mod": ("method",), "Met": ("method",),
    "Obs": ("result",), "Res": ("result",), "Con": ("result", "other"),
}
OLD_WORK = ("Exp", "Mod", "Met")  # with novelty="Old": method or background
SUFFIX = "_mode2"
SOURCE_NAME = "coresc-art"  # doc._.rhetoric_source of every paper read here
# ART's document-disjoint folds (benchmarks and training corpora agree on them): :func:`coresc_folds`
N_FOLDS, FOLD_SEED = 5, 0

# A sentence's text: <REF TYPE="P" ID="..."> are citations; every other element is flattened.
_sentence = ParagraphWalk(
    citation=lambda child, name: (child.get("ID") or "") if name == "REF" and child.get("TYPE") == "P" else None,
    skip=lambda name: not name,  # comments and processing instructions
    separate_citations=True,
).paragraph


def coarse_labels(concept: str, novelty: Optional[str] = None) -> List[str]:
    """The acceptable coarse labels of a CoreSC concept (short ``"Met"`` or
    full ``"Method"`` name), the primary one first; ``[]`` for an unknown
    concept."""
    short = {v: k for k, v in CONCEPTS.items()}.get(concept, concept)
    labels = list(COARSE.get(short, ()))
    if short in OLD_WORK and (novelty or "").lower() == "old":
        labels.append("background")
    return labels


class _Sentence:
    __slots__ = ("text", "citations", "heading", "paragraph", "concept", "novelty")

    def __init__(self, text, citations, heading, paragraph, concept, novelty):
        self.text, self.citations, self.heading = text, citations, heading
        self.paragraph, self.concept, self.novelty = paragraph, concept, novelty


class _Walk:
    """The sentences of one paper in document order (see the module docstring)."""

    def __init__(self, path: Path, stats: ReadStats):
        self.path = path
        self.stats = stats
        self.sentences: List[_Sentence] = []
        self.paragraph = 0

    def sentence(self, s, heading: Optional[str], paragraph: int) -> None:
        anns = [c for c in s if local_name(c.tag) == "annotationART"]
        ann = anns[0] if anns else s
        para = _sentence(ann, heading)
        if not para.text:
            self.stats.notes["empty sentence left out"] += 1
            return
        concept = ann.get("type") if anns else None
        if concept is not None and concept not in CONCEPTS:
            raise ReaderError(self.path, None, f"sentence {s.get('sid')!r}: unknown CoreSC concept {concept!r}",
                              field="type")
        self.sentences.append(_Sentence(para.text, para.citations, heading, paragraph, concept,
                                        ann.get("novelty") if anns else None))

    def block(self, elem, heading: Optional[str], paragraph: int) -> None:
        """Sentences under ``elem`` (abstract, paragraph), nested paragraphs included."""
        if norm_space(elem.text):
            self.stats.notes["text outside sentences left out"] += 1
        for child in elem:
            name = local_name(child.tag)
            if name == "s":
                self.sentence(child, heading, paragraph)
            elif name == "P":
                self.paragraph += 1
                self.block(child, heading, self.paragraph)
            if norm_space(child.tail):
                self.stats.notes["text outside sentences left out"] += 1

    def body(self, elem, heading: Optional[str], number: List[int]) -> None:
        """The sections under ``elem`` (BODY or a DIV): headed sub-sections
        are numbered below ``number``."""
        count = 0
        for child in elem:
            name = local_name(child.tag)
            if name == "DIV":
                header = child.find("HEADER")
                title = norm_space("".join(header.itertext())) if header is not None else ""
                if title:
                    count += 1
                    sub = number + [count]
                    self.body(child, " ".join([".".join(map(str, sub)), title]), sub)
                else:
                    self.body(child, heading, number)
            elif name == "P":
                self.paragraph += 1
                self.block(child, heading, self.paragraph)
            elif name == "s":
                self.sentence(child, heading, self.paragraph)
            if norm_space(child.tail):
                self.stats.notes["text outside sentences left out"] += 1


def parse_coresc(path: Union[str, Path],
                 stats: Optional[ReadStats] = None) -> Tuple[str, Optional[str], List[_Sentence]]:
    """(doc id, title, sentences) of one CoreSC XML file; a ReaderError
    naming the file when it is not one."""
    path = Path(path)
    stats = stats if stats is not None else ReadStats(name=str(path))
    root = parse_xml(path)
    if local_name(root.tag) != "PAPER":
        raise ReaderError(path, None, f"not CoreSC: the root element is <{local_name(root.tag)}>, not <PAPER>")
    mode2 = root.find("mode2")
    doc_id = (mode2.get("name") if mode2 is not None else None) or _stem(path)
    title_elem = root.find("TITLE")
    title = norm_space("".join(title_elem.itertext())) if title_elem is not None else ""
    walk = _Walk(path, stats)
    abstract = root.find("ABSTRACT")
    if abstract is not None:
        walk.block(abstract, ABSTRACT_HEADING, 0)
    body = root.find("BODY")
    if body is not None:
        walk.body(body, None, [])
    if not walk.sentences:
        raise ReaderError(path, None, "no sentences in ABSTRACT or BODY")
    if not any(s.concept for s in walk.sentences):
        raise ReaderError(path, None, "no CoreSC annotation (annotationART type) on any sentence", field="type")
    return doc_id, title or None, walk.sentences


def _stem(path: Path) -> str:
    stem = path.name[:-4] if path.name.lower().endswith(".xml") else path.name
    return stem[: -len(SUFFIX)] if stem.endswith(SUFFIX) and len(stem) > len(SUFFIX) else stem


def coresc_doc(nlp_or_vocab: Union[Language, Vocab], doc_id: str, title: Optional[str],
               sentences: List[_Sentence]) -> Doc:
    """One Doc from :func:`parse_coresc`'s output (see the module docstring)."""
    golds = [coarse_labels(s.concept, s.novelty) if s.concept else [] for s in sentences]
    doc = doc_from_sentences(nlp_or_vocab, [s.text for s in sentences],
                             labels=[g[0] if g else None for g in golds], doc_id=doc_id)
    sents = list(doc.sents)
    extensions.set_span_values(doc, GOLD_LABELS, sents, [g or None for g in golds])
    extensions.set_span_values(doc, FINE_LABEL, sents, [CONCEPTS.get(s.concept) for s in sentences])
    extensions.set_span_values(doc, HEADING, sents, [s.heading for s in sentences])
    extensions.set_span_values(doc, PARAGRAPH, sents, [s.paragraph for s in sentences])
    set_citation_spans(doc, sents, [source.citations for source in sentences])
    if title:
        extensions.set_doc_value(doc, extensions.TITLE, title)
    extensions.set_doc_value(doc, extensions.SOURCE, SOURCE_NAME)
    return doc


def coresc_folds(docs: Sequence[Doc], *, n_folds: int = N_FOLDS, seed: int = FOLD_SEED) -> List[str]:
    """Each paper's fold, ``"fold1"``..``"fold<n_folds>"``: the
    document-disjoint folds of their ids (``splits.kfold_doc_ids``, seeded)."""
    from .splits import kfold_doc_ids

    ids = [str(extensions.get_doc_value(d, extensions.DOC_ID)) for d in docs]
    fold_of = {i: f"fold{k + 1}" for k, fold in enumerate(kfold_doc_ids(ids, n_folds=n_folds, seed=seed))
               for i in fold}
    return [fold_of[i] for i in ids]


def read_coresc(
    path: Union[str, Path],
    nlp_or_vocab: Union[Language, Vocab],
    *,
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
) -> Iterator[Doc]:
    """Yield one Doc per CoreSC paper of ``path`` (a file, or a folder read
    recursively: ART's ``ann1``..``ann9``), see the module docstring. A file
    that is not usable (broken or refused XML, not CoreSC, no annotated
    sentence, an unknown concept) is skipped and counted (``errors="skip"``:
    its one-line reason in the summary) or raises a ReaderError naming it;
    ``limit`` > 0 stops after that many Docs."""
    check_errors_mode(errors)
    stats = stats if stats is not None else ReadStats(name=str(path))
    for file in suffix_files(path, ".xml"):
        if limit > 0 and stats.docs >= limit:
            return
        stats.read += 1
        try:
            doc = coresc_doc(nlp_or_vocab, *parse_coresc(file, stats))
        except ReaderError as err:
            handle(err, errors, stats)
            continue
        except OSError as err:
            handle(ReaderError(file, None, f"cannot read: {err}"), errors, stats)
            continue
        stats.used += 1
        stats.docs += 1
        stats.sentences += sum(1 for _ in doc.sents)
        yield doc
