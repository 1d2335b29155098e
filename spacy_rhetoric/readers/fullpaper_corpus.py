"""The corpora of the full-paper classifiers: papers with expert sentence
labels beside CSAbstruct abstracts, written as ``.spacy`` files that
``spacy_rhetoric.SectionLabelCorpus.v1``/``.v2`` (``readers.section_labels``)
read.

* :func:`write_fullpaper_corpus` / :func:`build_fullpaper_corpus`: the
  default coarse classifier's corpus (``configs/classifier.cfg``):
  CSAbstruct train + MuLMS-AZ (materials science, CC BY-SA 4.0) + AZ-CL
  (computational linguistics, CC BY-SA 3.0) papers, optionally ART / CoreSC
  (chemistry, CC BY-NC) and the facet-labelled CL-SciSumm papers; each
  corpus's papers repeated so that no corpus dominates the network's
  training (``MULMS_COPIES``, ``AZ_COPIES``: about as many sentences from
  each corpus of papers as from the abstracts), every paper keeping
  ``doc._.rhetoric_source`` so that the fine-tuned member weighs each corpus
  the same (``balance_sources``);
* :func:`write_coresc_corpus` / :func:`write_az_corpus`: the fine heads'
  corpora (``configs/coresc_classifier.cfg``: the 11 CoreSC concepts;
  ``configs/az_classifier.cfg``: the 7 argumentative zones), one corpus
  alone, its document-disjoint folds held out for cross-validation.

Every paper's sections come from the default ``rhetoric_section_tagger``, as
a pipeline would see them. Command line: ``python -m
spacy_rhetoric.readers.section_labels OUTPUT --fullpaper [--az] …``.
"""
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc, DocBin

from ..errors import RhetoricError
from ..extensions import DOC_ID, HEADING, SECTION, get_doc_value, set_span_values
from ..section_headings import ABSTRACT
from .az import az_folds
from .coresc import coresc_folds

CLSCISUMM_MANUAL = "cl-scisumm/training-40-manual"  # the manually annotated topics, under a data directory
AZ_DIR = "az-cl"  # the AZ-CL papers, under a data directory
MULMS_COPIES = 3  # times each MuLMS-AZ paper is in the full-paper training corpus (36 papers, 6,617 sentences)
AZ_COPIES = 2  # times each AZ-CL paper is (50 papers, 8,346 sentences): about as many sentences as MuLMS-AZ's


def abstract_sections(doc: Doc) -> Doc:
    """Mark every sentence of a CSAbstruct doc as heading "Abstract", section
    ``abstract``."""
    sents = list(doc.sents) if len(doc) else []
    set_span_values(doc, HEADING, sents, ["Abstract"] * len(sents))
    set_span_values(doc, SECTION, sents, [ABSTRACT] * len(sents))
    return doc


def write_docs(docs: Iterable[Doc], path: Path) -> Dict[str, int]:
    """Write ``docs`` to the DocBin ``path`` (atomically); their counts."""
    from ..io import atomic_path

    docbin = DocBin(store_user_data=True)
    n_docs = n_sents = 0
    for doc in docs:
        docbin.add(doc)
        n_docs += 1
        n_sents += sum(1 for _ in doc.sents) if len(doc) else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        docbin.to_disk(tmp)
    return {"docs": n_docs, "sentences": n_sents}


def csabstruct_docs(path: Union[str, Path], nlp: Language) -> List[Doc]:
    """CSAbstruct ``.jsonl`` as docs with section ``abstract``."""
    from .csabstruct import read_csabstruct

    return [abstract_sections(d) for d in read_csabstruct(path, nlp)]


def mulms_docs(path: Union[str, Path], nlp: Language, tagger, *, folds: Optional[Sequence[str]] = None) -> List[Doc]:
    """MuLMS-AZ papers (``readers.mulms``) with their sections tagged by
    ``tagger`` (a rhetoric_section_tagger), as a pipeline would see them."""
    from .mulms import read_mulms

    return [tagger(doc) for doc in read_mulms(path, nlp, folds=folds)]


def coresc_docs(path: Union[str, Path], nlp: Language, tagger) -> List[Doc]:
    """ART / CoreSC papers (``readers.coresc``; a file or a folder) with their
    sections tagged by ``tagger``, as :func:`mulms_docs`."""
    from .coresc import read_coresc

    return [tagger(doc) for doc in read_coresc(path, nlp)]


def az_docs(path: Union[str, Path], nlp: Language, tagger) -> List[Doc]:
    """AZ-CL papers (``readers.az``; a file or a folder) with their sections
    tagged by ``tagger``, as :func:`mulms_docs`."""
    from .az import read_az

    return [tagger(doc) for doc in read_az(path, nlp)]


def clscisumm_docs(path: Union[str, Path], nlp: Language, tagger) -> List[Doc]:
    """The facet-labelled CL-SciSumm reference papers (``readers.clscisumm.read_facet_docs``)
    with their sections tagged by ``tagger``, as :func:`mulms_docs`; an error
    when none is read."""
    from .clscisumm import read_facet_docs

    docs = [tagger(doc) for doc in read_facet_docs(path, nlp)]
    if not docs:
        raise RhetoricError(f"no CL-SciSumm reference paper with faceted citances under {path}")
    return docs


def hold_out(docs: Sequence[Doc], folds: Sequence[str], held: Sequence[str],
             name: str) -> Tuple[List[Doc], List[Doc]]:
    """(papers of the other folds, papers of the ``held`` folds); an error
    naming the corpus for a fold it does not have."""
    unknown = set(held) - set(folds)
    if unknown:
        raise RhetoricError(f"no {name} fold {sorted(unknown)}: the folds are {sorted(set(folds))}")
    return ([d for d, f in zip(docs, folds) if f not in held], [d for d, f in zip(docs, folds) if f in held])


def build_fullpaper_corpus(data: Union[str, Path], output: Union[str, Path], *,
                           heldout_folds: Sequence[str] = (), mulms_copies: int = MULMS_COPIES,
                           az: bool = False, az_heldout_folds: Sequence[str] = (), az_copies: int = AZ_COPIES,
                           coresc: bool = False, coresc_heldout_folds: Sequence[str] = (),
                           clscisumm: bool = False, lang: str = "en") -> Dict[str, Dict[str, int]]:
    """The full-paper classifier's corpus (``configs/classifier.cfg``)
    from a data directory (``write_fullpaper_corpus`` with its CSAbstruct and
    MuLMS-AZ files; ``az``: + its AZ-CL papers, ``az-cl/``; ``coresc``: + its
    ART / CoreSC papers, ``coresc-art/``; ``clscisumm``: + the facet-labelled
    CL-SciSumm reference papers, ``cl-scisumm/training-40-manual/``)."""
    data = Path(data)
    return write_fullpaper_corpus(data / "csabstruct" / "train.jsonl", data / "csabstruct" / "dev.jsonl",
                                  data / "mulms-az" / "train.jsonl", output, heldout_folds=heldout_folds,
                                  mulms_copies=mulms_copies, az=data / AZ_DIR if az else None,
                                  az_heldout_folds=az_heldout_folds, az_copies=az_copies,
                                  coresc=data / "coresc-art" if coresc else None,
                                  coresc_heldout_folds=coresc_heldout_folds,
                                  clscisumm=data / CLSCISUMM_MANUAL if clscisumm else None, lang=lang)


def write_fullpaper_corpus(csabstruct_train: Path, csabstruct_dev: Path, mulms: Optional[Path],
                           output: Union[str, Path], *, heldout_folds: Sequence[str] = (),
                           mulms_copies: int = MULMS_COPIES, az: Optional[Path] = None,
                           az_heldout_folds: Sequence[str] = (), az_copies: int = AZ_COPIES,
                           coresc: Optional[Path] = None, coresc_heldout_folds: Sequence[str] = (),
                           clscisumm: Optional[Path] = None, clscisumm_copies: int = 1,
                           lang: str = "en") -> Dict[str, Dict[str, int]]:
    """Write under ``output``: ``train.spacy`` = CSAbstruct train (section
    ``abstract``) + the MuLMS-AZ papers (``mulms``, when given) of every fold
    but ``heldout_folds``, their sections from the default
    ``rhetoric_section_tagger``, each paper ``mulms_copies`` times (36 papers
    beside 1,668 abstracts: the copies weigh the full papers up; section
    dropout makes each copy a different view in every epoch); ``dev.spacy`` = CSAbstruct dev;
    ``heldout.spacy`` = the held-out MuLMS-AZ papers (when any: the
    cross-validation of ``benchmarks/fullpaper/bench_fullpaper.py``). ``az``:
    an AZ-CL file or folder (computational linguistics, CC BY-SA 3.0) whose
    papers join ``train.spacy`` ``az_copies`` times each; ``az_heldout_folds``:
    its papers of these folds (``readers.az.az_folds``: ``fold1``..``fold5``)
    are left out and written to ``heldout_az.spacy``. ``coresc``: an
    ART / CoreSC file or folder whose papers join ``train.spacy`` once each
    (chemistry; off by default: ART is licensed CC BY-NC, and a pipeline
    trained on it inherits the non-commercial condition); ``coresc_heldout_folds``:
    its papers of these folds (``readers.coresc.coresc_folds``: ``fold1``..``fold5``)
    are left out of ``train.spacy`` and written to ``heldout_coresc.spacy``. Each
    paper keeps ``doc._.rhetoric_source`` (``mulms-az``, ``az-cl``, ``coresc-art``): the
    fine-tuned member balances its sources by it. ``clscisumm``: a folder of
    CL-SciSumm topics whose manually annotated reference papers (computational
    linguistics, CC BY 4.0) join ``train.spacy`` ``clscisumm_copies`` times
    each, only some sentences labelled: those cited, by the discourse facets
    of the citances, and background ones (``readers.clscisumm.read_facet_docs``;
    source ``cl-scisumm``).
    Returns counts."""
    import spacy

    output = Path(output)
    nlp = spacy.blank(lang)
    tagger = spacy.blank(lang).add_pipe("rhetoric_section_tagger")
    papers = mulms_docs(mulms, nlp, tagger) if mulms is not None else []
    held = set(heldout_folds)
    fold = [get_doc_value(d, "fold") for d in papers]
    train_papers = [d for d, f in zip(papers, fold) if f not in held]
    cs_train = csabstruct_docs(csabstruct_train, nlp)
    if coresc_heldout_folds and coresc is None:
        raise RhetoricError("coresc_heldout_folds needs the ART / CoreSC papers (coresc)")
    if az_heldout_folds and az is None:
        raise RhetoricError("az_heldout_folds needs the AZ-CL papers (az)")
    art = coresc_docs(coresc, nlp, tagger) if coresc is not None else []
    art_train, art_held = hold_out(art, coresc_folds(art) if art else [], coresc_heldout_folds, "ART / CoreSC")
    zoned = az_docs(az, nlp, tagger) if az is not None else []
    az_train, az_held = hold_out(zoned, az_folds(zoned) if zoned else [], az_heldout_folds, "AZ-CL")
    facet_papers = clscisumm_docs(clscisumm, nlp, tagger) if clscisumm is not None else []
    counts = {"train": write_docs(cs_train + train_papers * max(1, int(mulms_copies))
                                  + az_train * max(1, int(az_copies))
                                  + facet_papers * max(1, int(clscisumm_copies)) + art_train, output / "train.spacy")}
    counts["train"].update(csabstruct=len(cs_train), mulms_papers=len(train_papers))
    for name, given, found in (("az_papers", az, az_train), ("clscisumm_papers", clscisumm, facet_papers),
                               ("coresc_papers", coresc, art_train)):
        if given is not None:
            counts["train"][name] = len(found)
    counts["dev"] = write_docs(csabstruct_docs(csabstruct_dev, nlp), output / "dev.spacy")
    if held:
        counts["heldout"] = write_docs([d for d, f in zip(papers, fold) if f in held], output / "heldout.spacy")
    if az_heldout_folds:
        counts["heldout_az"] = write_docs(az_held, output / "heldout_az.spacy")
    if coresc_heldout_folds:
        counts["heldout_coresc"] = write_docs(art_held, output / "heldout_coresc.spacy")
    return counts


def write_fine_corpus(docs: Sequence[Doc], folds: Sequence[str], output: Union[str, Path], name: str, *,
                      heldout_folds: Sequence[str] = (), dev_share: float = 0.1) -> Dict[str, Dict[str, int]]:
    """A fine head's corpus from one corpus's papers: those of every fold but
    ``heldout_folds`` split by paper id into ``train.spacy`` and
    ``dev.spacy`` (``dev_share`` of them, seeded: spaCy's evaluation during
    training); ``heldout.spacy``: the held-out folds' papers
    (cross-validation). Returns counts."""
    from .splits import split_doc_ids

    output = Path(output)
    if not docs:
        raise RhetoricError(f"no {name} paper read")
    kept, held = hold_out(docs, folds, heldout_folds, name)
    ids = [str(get_doc_value(d, DOC_ID)) for d in kept]
    _, dev_ids = split_doc_ids(ids, share=1.0 - dev_share, seed=0)
    dev_set = set(dev_ids)
    counts = {"train": write_docs([d for d, i in zip(kept, ids) if i not in dev_set], output / "train.spacy"),
              "dev": write_docs([d for d, i in zip(kept, ids) if i in dev_set], output / "dev.spacy")}
    if heldout_folds:
        counts["heldout"] = write_docs(held, output / "heldout.spacy")
    return counts


def write_coresc_corpus(coresc: Path, output: Union[str, Path], *, heldout_folds: Sequence[str] = (),
                        dev_share: float = 0.1, lang: str = "en") -> Dict[str, Dict[str, int]]:
    """The CoreSC classifier's corpus (``configs/coresc_classifier.cfg``: the
    11 CoreSC concepts as the fine label) from ART / CoreSC papers (a file or
    a folder; CC BY-NC, and so is a model trained on it), folds
    ``readers.coresc.coresc_folds`` (:func:`write_fine_corpus`)."""
    import spacy

    art = coresc_docs(coresc, spacy.blank(lang), spacy.blank(lang).add_pipe("rhetoric_section_tagger"))
    return write_fine_corpus(art, coresc_folds(art) if art else [], output, "ART / CoreSC",
                             heldout_folds=heldout_folds, dev_share=dev_share)


def write_az_corpus(az: Path, output: Union[str, Path], *, heldout_folds: Sequence[str] = (),
                    dev_share: float = 0.1, lang: str = "en") -> Dict[str, Dict[str, int]]:
    """The AZ classifier's corpus (``configs/az_classifier.cfg``: the 7
    argumentative zones as the fine label) from AZ-CL papers (a file or a
    folder; CC BY-SA 3.0), folds ``readers.az.az_folds``
    (:func:`write_fine_corpus`)."""
    import spacy

    zoned = az_docs(az, spacy.blank(lang), spacy.blank(lang).add_pipe("rhetoric_section_tagger"))
    return write_fine_corpus(zoned, az_folds(zoned) if zoned else [], output, "AZ-CL",
                             heldout_folds=heldout_folds, dev_share=dev_share)
