"""The multi-source corpus of the section-aware function classifier
(``configs/classifier_sections.cfg``): coarse labels
``background / objective / method / result / other`` and each sentence's
section category, from three sources.

* CSAbstruct (gold, in order): heading "Abstract", section ``abstract``.
* PMC-Sents-FULL (labels derived from section titles; order and section text
  lost): section none (the classifier sees ``unknown``); labels mapped by
  ``PMC_LABELS``: ``methods -> method``, ``results -> result``, the others
  unchanged.
* CL-SciSumm reference papers (weak labels): ``rhetoric_section_tagger``
  tags each sentence's section from its heading and the label is derived
  from the section the way PMC-Sents-FULL's were (``SECTION_LABELS``):
  introduction and related work -> background, method -> method, results ->
  result, conclusion (discussion) and other (back matter, junk) -> other;
  abstract and title sentences have no label (kept as context). Papers are
  cut into pieces of at most ``max_sents`` sentences.

:func:`build_section_corpus` writes the ``.spacy`` files (paper-disjoint
splits, ``splits.split_docbin`` / ``split_doc_ids``)::

    python -m spacy_rhetoric.readers.section_labels corpus/sections --data ../shared/data

``spacy_rhetoric.SectionLabelCorpus.v1`` reads them (a file or a directory):
one Example per doc whose *predicted* doc carries the reference's
``heading``, ``section`` and ``title`` values too, since the classifier reads
the section from the doc it labels (in a pipeline, the section tagger writes
it).

The full-paper classifiers' corpora (CSAbstruct + papers with expert labels:
MuLMS-AZ, AZ-CL, ART / CoreSC) are built in ``readers.fullpaper_corpus``
(re-exported here); this module's command line writes both kinds
(``--fullpaper``, ``--coresc-only``, ``--az-only``).
"""
import random
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import registry

from .. import extensions
from ..errors import RhetoricError
from ..extensions import (
    DOC_ID,
    HEADING,
    LABEL,
    SECTION,
    TITLE,
    docbin_docs,
    get_doc_value,
    get_span_value,
    set_span_values,
)
from ..section_headings import (
    ABSTRACT,
    BACK_MATTER,
    CONCLUSION,
    INTRODUCTION,
    METHOD,
    OTHER,
    RELATED_WORK,
    RESULTS,
    sentence_sections,
)
from ..section_headings import TITLE as T
from .common import doc_from_sentences, shuffle_and_limit, spacy_files
from .fullpaper_corpus import (  # noqa: F401 - the full-paper corpora, re-exported (readers/fullpaper_corpus.py)
    CLSCISUMM_MANUAL,
    MULMS_COPIES,
    abstract_sections,
    build_fullpaper_corpus,
    coresc_docs,
    csabstruct_docs,
    mulms_docs,
    write_az_corpus,
    write_coresc_corpus,
    write_docs,
    write_fullpaper_corpus,
)

COARSE_LABELS = ("background", "objective", "method", "result", "other")
# section category (rhetoric_section_tagger) -> weak coarse label; None: no label
SECTION_LABELS: Dict[str, Optional[str]] = {
    INTRODUCTION: "background", RELATED_WORK: "background", METHOD: "method", RESULTS: "result",
    CONCLUSION: "other", OTHER: "other", ABSTRACT: None, T: None,
}
# PMC-Sents-FULL label -> coarse label
PMC_LABELS = {"background": "background", "objective": "objective", "methods": "method", "results": "result",
              "other": "other"}
COPIED_FIELDS = (HEADING, SECTION)


def copy_section_fields(ref: Doc, pred: Doc) -> Doc:
    """Copy the ``heading``/``section`` values and the title of ``ref`` to
    ``pred`` (same text and tokens, as ``nlp.make_doc(ref.text)``)."""
    if pred.text != ref.text or len(pred) != len(ref):
        return pred
    return _copy_fields(ref, pred)


def _copy_fields(ref: Doc, pred: Doc) -> Doc:
    for field in COPIED_FIELDS:
        spans = extensions.labelled_spans(ref, field=field)
        extensions.set_span_values(pred, field, [pred[s:e] for s, e, _ in spans], [v for _, _, v in spans])
    title = get_doc_value(ref, TITLE)
    if title is not None:
        extensions.set_doc_value(pred, TITLE, title)
    return pred


class SectionLabelCorpus:
    def __init__(self, path: Union[str, Path], limit: int = 0, shuffle: bool = False,
                 section_dropout: float = 0.0, doc_section_dropout: float = 0.0):
        self.path = Path(path)
        self.limit = int(limit)
        self.shuffle = bool(shuffle)
        for name, value in (("section_dropout", section_dropout), ("doc_section_dropout", doc_section_dropout)):
            if not 0.0 <= float(value) <= 1.0:
                raise RhetoricError(f"SectionLabelCorpus: {name} must be in [0, 1], got {value}")
        self.section_dropout = float(section_dropout)
        self.doc_section_dropout = float(doc_section_dropout)
        self._cache_key: Any = None
        self._cache: List[Tuple[Doc, str]] = []

    def references(self, nlp: Language) -> List[Tuple[Doc, str]]:
        """The corpus's reference docs and their texts, read once per set of
        files (path, size, modification time) and vocab: ``spacy train``
        calls the reader at every initialize pass and every epoch, and
        deserialising the papers and joining their texts each time cost
        more than a fifth of the demo's training."""
        files = spacy_files(self.path, recursive=False, what="SectionLabelCorpus")
        key = (id(nlp.vocab), tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))
        if key != self._cache_key:
            self._cache = [(doc, doc.text) for f in files for doc in docbin_docs(DocBin().from_disk(f), nlp.vocab)]
            self._cache_key = key
        return self._cache

    def __call__(self, nlp: Language) -> Iterator[Example]:
        for ref, text in shuffle_and_limit(self.references(nlp), shuffle=self.shuffle, limit=self.limit):
            pred = nlp.make_doc(text)
            if len(pred) == len(ref):  # made from ref's text: the same tokens unless the tokenizer differs
                _copy_fields(ref, pred)
            if self.section_dropout or self.doc_section_dropout:
                drop_sections(pred, self.section_dropout, self.doc_section_dropout)
            yield Example(pred, ref)


def drop_sections(doc: Doc, section_dropout: float, doc_section_dropout: float,
                  rng: Optional[random.Random] = None) -> Doc:
    """Section dropout: remove the ``section`` value of each run of
    consecutive same-section sentences with probability ``section_dropout``,
    and of the whole doc with probability ``doc_section_dropout``, so a
    section-aware classifier sees the sentence's own words and neighbours with
    section ``unknown`` (plain text, a topical heading) and learns to weigh
    the section rather than copy it. Headings are kept (back matter stays
    back matter). ``rng``: defaults to the ``random`` module (seeded by
    ``spacy train``)."""
    rng = rng or random
    values = extensions.labelled_spans(doc, field=SECTION)  # (start, end, section) in doc order
    if not values:
        return doc
    if rng.random() < doc_section_dropout:
        extensions.clear_field(doc, SECTION)
        return doc
    if section_dropout <= 0.0:
        return doc
    kept, previous, keep = [], object(), True
    for start, end, value in values:
        if value != previous:
            keep = rng.random() >= section_dropout
            previous = value
        if keep:
            kept.append((start, end, value))
    extensions.clear_field(doc, SECTION)
    set_span_values(doc, SECTION, [doc[start:end] for start, end, _ in kept], [value for _, _, value in kept])
    return doc


@registry.readers("spacy_rhetoric.SectionLabelCorpus.v1")
def section_label_corpus(path: Path, limit: int = 0, shuffle: bool = False) -> SectionLabelCorpus:
    """``.spacy`` files of :func:`build_section_corpus` (a file or a
    directory): one Example per doc, sections on both sides."""
    return SectionLabelCorpus(path, limit=limit, shuffle=shuffle)


@registry.readers("spacy_rhetoric.SectionLabelCorpus.v2")
def section_label_corpus_v2(path: Path, limit: int = 0, shuffle: bool = False, section_dropout: float = 0.0,
                            doc_section_dropout: float = 0.0) -> SectionLabelCorpus:
    """v1 plus section dropout (:func:`drop_sections`) on the predicted docs:
    ``section_dropout`` per run of same-section sentences,
    ``doc_section_dropout`` per doc. Use it for the training corpus only."""
    return SectionLabelCorpus(path, limit=limit, shuffle=shuffle, section_dropout=section_dropout,
                              doc_section_dropout=doc_section_dropout)


# --------------------------------------------------------------------------
# Building the corpus


def pmc_coarse(doc: Doc) -> Doc:
    """Map the PMC-Sents-FULL labels of ``doc`` to the coarse set (PMC_LABELS)."""
    sents = list(doc.sents) if len(doc) else []
    labels = [get_span_value(s, LABEL) for s in sents]
    set_span_values(doc, LABEL, sents, [PMC_LABELS.get(label, label) if label else None for label in labels])
    return doc


def weak_labels(sections: Sequence[Optional[str]], back_matter: Sequence[bool] = ()) -> List[Optional[str]]:
    """Weak coarse labels of sentences from their section categories
    (``SECTION_LABELS``; a back-matter sentence is ``other``)."""
    back = list(back_matter) or [False] * len(sections)
    return ["other" if b else SECTION_LABELS.get(s) if s else None for s, b in zip(sections, back)]


def weak_label_papers(docs: Iterable[Doc], nlp: Language, tagger, *, max_sents: int = 0) -> Iterator[Doc]:
    """Tag the sections of paper docs (``tagger``: a rhetoric_section_tagger)
    and yield docs with weak labels (``weak_labels``), headings and sections,
    cut into pieces of at most ``max_sents`` sentences (0: whole papers)."""
    for doc in docs:
        doc = tagger(doc)
        sents = [s for s in doc.sents if s.text.strip()]
        if not sents:
            continue
        sections = [get_span_value(s, SECTION) for s in sents]
        features = sentence_sections(doc, [s.start for s in sents])
        labels = weak_labels(sections, [f == BACK_MATTER for f in features])
        headings = [get_span_value(s, HEADING) for s in sents]
        doc_id = get_doc_value(doc, DOC_ID)
        step = max_sents if max_sents > 0 else len(sents)
        for k in range(0, len(sents), step):
            piece = doc_from_sentences(nlp, [s.text for s in sents[k:k + step]], labels=labels[k:k + step],
                                       sections=sections[k:k + step], doc_id=doc_id)
            set_span_values(piece, HEADING, list(piece.sents), headings[k:k + step])
            title = get_doc_value(doc, TITLE)
            if title:
                extensions.set_doc_value(piece, TITLE, title)
            yield piece


def pmc_splits(path: Union[str, Path], nlp: Language) -> Tuple[List[Doc], List[Doc], List[Doc]]:
    """PMC-Sents-FULL ``dev.jsonl`` (coarse labels) split by article as
    benchmarks/classifier/run_pmc.sh does: (train_fit, valid, test) = 80 % (seed 0) of the
    ids split again 90/10 (seed 1), and the other 20 %."""
    from .pmc import read_pmc_sents
    from .splits import split_doc_ids

    pmc = [pmc_coarse(d) for d in read_pmc_sents(path, nlp)]
    ids = [str(get_doc_value(d, DOC_ID)) for d in pmc]
    train_ids, _ = split_doc_ids(ids, share=0.8, seed=0)
    fit_ids, _ = split_doc_ids(train_ids, share=0.9, seed=1)
    train, fit = set(train_ids), set(fit_ids)
    return ([d for d, i in zip(pmc, ids) if i in fit],
            [d for d, i in zip(pmc, ids) if i in train and i not in fit],
            [d for d, i in zip(pmc, ids) if i not in train])


def read_scisumm_papers(path: Union[str, Path], nlp: Language, *, limit: int = 0) -> Dict[str, Doc]:
    """CL-SciSumm reference papers (``read_papers``, format clscisumm) by
    paper id (first occurrence kept)."""
    from .papers import read_papers

    papers: Dict[str, Doc] = {}
    for doc in read_papers(path, nlp, fmt="clscisumm", limit=limit):
        papers.setdefault(str(get_doc_value(doc, DOC_ID)), doc)
    return papers


def build_section_corpus(data: Union[str, Path], output: Union[str, Path], *, scisumm_train_papers: int = 100,
                         scisumm_heldout_share: float = 0.1, max_sents: int = 40, seed: int = 0,
                         lang: str = "en") -> Dict[str, Dict[str, int]]:
    """Write under ``output``: ``train.spacy`` (CSAbstruct train + PMC
    train_fit + ``scisumm_train_papers`` CL-SciSumm training papers, weak
    labels), ``dev.spacy`` (CSAbstruct dev + PMC valid: model selection),
    ``csabstruct_dev.spacy``, ``pmc_test.spacy`` (the article-disjoint test
    split of benchmarks/classifier/run_pmc.sh, see ``pmc_splits``) and
    ``scisumm_heldout.spacy`` (whole held-out papers,
    ``scisumm_heldout_share`` of the paper ids, ``splits.split_doc_ids``;
    weak labels). Returns counts per file."""
    import spacy

    from .splits import split_doc_ids

    data, output = Path(data), Path(output)
    nlp = spacy.blank(lang)
    counts: Dict[str, Dict[str, int]] = {}
    cs_train = csabstruct_docs(data / "csabstruct" / "train.jsonl", nlp)
    cs_dev = csabstruct_docs(data / "csabstruct" / "dev.jsonl", nlp)
    pmc_fit, pmc_valid, pmc_test = pmc_splits(data / "pmc-sents-full" / "dev.jsonl", nlp)
    tagger = spacy.blank(lang).add_pipe("rhetoric_section_tagger")
    papers = read_scisumm_papers(data / "cl-scisumm", nlp)
    train_ids, heldout_ids = split_doc_ids(sorted(papers), share=1.0 - scisumm_heldout_share, seed=seed)
    rng = random.Random(seed)
    rng.shuffle(train_ids)
    train_ids = sorted(train_ids[:scisumm_train_papers]) if scisumm_train_papers > 0 else sorted(train_ids)
    scisumm_train = list(weak_label_papers((papers[i] for i in train_ids), nlp, tagger, max_sents=max_sents))
    scisumm_heldout = list(weak_label_papers((papers[i] for i in heldout_ids), nlp, tagger))

    counts["train"] = write_docs(cs_train + pmc_fit + scisumm_train, output / "train.spacy")
    counts["train"].update(csabstruct=len(cs_train), pmc_articles=len(pmc_fit), scisumm_papers=len(train_ids))
    counts["dev"] = write_docs(cs_dev + pmc_valid, output / "dev.spacy")
    counts["csabstruct_dev"] = write_docs(cs_dev, output / "csabstruct_dev.spacy")
    counts["pmc_test"] = write_docs(pmc_test, output / "pmc_test.spacy")
    counts["scisumm_heldout"] = write_docs(scisumm_heldout, output / "scisumm_heldout.spacy")
    counts["scisumm_heldout"]["papers"] = len(heldout_ids)
    return counts


def build_small_corpus(csabstruct_train: Path, csabstruct_dev: Path, output: Union[str, Path], *,
                       pmc: Optional[Path] = None, scisumm: Optional[Path] = None, scisumm_papers: int = 60,
                       max_sents: int = 40, lang: str = "en") -> Dict[str, Dict[str, int]]:
    """The demo's corpus: ``train.spacy`` = CSAbstruct train + (when given)
    the PMC train_fit split + the first ``scisumm_papers`` CL-SciSumm papers
    with weak labels; ``dev.spacy`` = CSAbstruct dev."""
    import spacy

    output = Path(output)
    nlp = spacy.blank(lang)
    train = csabstruct_docs(csabstruct_train, nlp)
    counts: Dict[str, Dict[str, int]] = {"sources": {"csabstruct": len(train)}}
    if pmc is not None:
        fit = pmc_splits(pmc, nlp)[0]
        counts["sources"]["pmc_articles"] = len(fit)
        train += fit
    if scisumm is not None and scisumm_papers > 0:
        tagger = spacy.blank(lang).add_pipe("rhetoric_section_tagger")
        papers = list(read_scisumm_papers(scisumm, nlp, limit=scisumm_papers).values())
        counts["sources"]["scisumm_papers"] = len(papers)
        train += list(weak_label_papers(papers, nlp, tagger, max_sents=max_sents))
    counts["train"] = write_docs(train, output / "train.spacy")
    counts["dev"] = write_docs(csabstruct_docs(csabstruct_dev, nlp), output / "dev.spacy")
    return counts


def main(argv=None) -> Dict[str, Dict[str, int]]:
    """The command line (see the module docstring and ``readers.fullpaper_corpus``)."""
    import argparse

    import srsly

    parser = argparse.ArgumentParser(description=build_section_corpus.__doc__)
    parser.add_argument("output", type=Path)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--scisumm-train-papers", type=int, default=100)
    parser.add_argument("--max-sents", type=int, default=40)
    parser.add_argument("--fullpaper", action="store_true", help="build_fullpaper_corpus instead")
    parser.add_argument("--heldout-folds", nargs="*", default=[], help="with --fullpaper: MuLMS folds left out")
    parser.add_argument("--mulms-copies", type=int, default=MULMS_COPIES, help="with --fullpaper: copies per paper")
    parser.add_argument("--az", action="store_true", help="with --fullpaper: + the AZ-CL papers (CC BY-SA 3.0)")
    parser.add_argument("--az-heldout-folds", nargs="*", default=[],
                        help="with --az: AZ-CL folds (fold1..fold5) left out, written to heldout_az.spacy")
    parser.add_argument("--coresc", action="store_true",
                        help="with --fullpaper: + the ART / CoreSC papers (CC BY-NC: non-commercial use only)")
    parser.add_argument("--coresc-heldout-folds", nargs="*", default=[],
                        help="with --coresc: ART folds (fold1..fold5) left out, written to heldout_coresc.spacy")
    parser.add_argument("--clscisumm", action="store_true",
                        help="with --fullpaper: + the CL-SciSumm reference papers, cited sentences labelled by facet")
    parser.add_argument("--coresc-only", action="store_true",
                        help="write_coresc_corpus instead: the ART / CoreSC papers alone, CoreSC concepts as fine "
                             "labels (with --heldout-folds: ART folds fold1..fold5 left out)")
    parser.add_argument("--az-only", action="store_true",
                        help="write_az_corpus instead: the AZ-CL papers alone, zones as fine labels (with "
                             "--heldout-folds: AZ-CL folds fold1..fold5 left out)")
    args = parser.parse_args(argv)
    if args.coresc_only:
        result = write_coresc_corpus(args.data / "coresc-art", args.output, heldout_folds=args.heldout_folds)
    elif args.az_only:
        result = write_az_corpus(args.data / "az-cl", args.output, heldout_folds=args.heldout_folds)
    elif args.fullpaper:
        result = build_fullpaper_corpus(args.data, args.output, heldout_folds=args.heldout_folds,
                                        mulms_copies=args.mulms_copies, az=args.az,
                                        az_heldout_folds=args.az_heldout_folds, coresc=args.coresc,
                                        coresc_heldout_folds=args.coresc_heldout_folds, clscisumm=args.clscisumm)
    else:
        result = build_section_corpus(args.data, args.output, scisumm_train_papers=args.scisumm_train_papers,
                                      max_sents=args.max_sents)
    print(srsly.json_dumps(result, indent=2))
    return result


if __name__ == "__main__":  # pragma: no cover
    main()
