"""Registered corpus readers, usable in the ``[corpora]`` block of a config
like ``spacy.Corpus.v1``::

    [corpora.train]
    @readers = "spacy_rhetoric.CSAbstructCorpus.v1"
    path = ${paths.train}
    limit = 0
    shuffle = false

Each returns a callable ``(nlp) -> Iterator[Example]``; the reference Doc of
an Example carries the gold sentence boundaries, labels, sections, sids and
doc id, the predicted Doc is ``nlp.make_doc(reference.text)``. With
``shuffle = true`` the Examples are shuffled (Python's ``random``, which
``spacy train`` seeds) before ``limit`` is applied, as in spacy.Corpus.

``spacy_rhetoric.SentenceCorpus.v1`` reads ``.spacy`` DocBins written by
``spacy-rhetoric convert`` and yields one Example per labelled sentence (the
input of the PK batcher and the sentence encoder).
"""
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import registry

from .. import extensions
from .az import read_az
from .citation_intent import read_citation_intent
from .clscisumm import read_reference_docs
from .common import ReadStats, labelled_sentence_docs, shuffle_and_limit, spacy_files
from .csabstruct import read_csabstruct
from .papers import read_papers
from .pmc import read_pmc_sents

CorpusReader = Callable[[Language], Iterator[Example]]


class _DocCorpus:
    """Wraps a ``(path, nlp, stats=...) -> Iterator[Doc]`` reader."""

    def __init__(self, name: str, read, path: Union[str, Path], *, limit: int = 0,
                 shuffle: bool = False, verbose: bool = False, **kwargs):
        self.name = name
        self.read = read
        self.path = Path(path)
        self.limit = int(limit)
        self.shuffle = bool(shuffle)
        self.verbose = verbose
        self.kwargs = kwargs
        self.stats: Optional[ReadStats] = None  # statistics of the last pass

    def docs(self, nlp: Language) -> Iterator[Doc]:
        if not self.path.exists():
            raise FileNotFoundError(f"{self.name}: no such file or directory: {self.path}")
        self.stats = ReadStats(name=f"{self.name} {self.path}")
        # Without shuffling, stop reading at the limit; with shuffling, read all.
        limit = 0 if self.shuffle else self.limit
        yield from self.read(self.path, nlp, limit=limit, stats=self.stats, **self.kwargs)
        if self.verbose or self.stats.skipped:
            self.stats.print_summary()

    def __call__(self, nlp: Language) -> Iterator[Example]:
        for ref in shuffle_and_limit(self.docs(nlp), shuffle=self.shuffle, limit=self.limit):
            yield Example(nlp.make_doc(ref.text), ref)


@registry.readers("spacy_rhetoric.CSAbstructCorpus.v1")
def csabstruct_corpus(path: Path, limit: int = 0, shuffle: bool = False) -> CorpusReader:
    """CSAbstruct ``.jsonl``: one Example per abstract."""
    return _DocCorpus("CSAbstruct", read_csabstruct, path, limit=limit, shuffle=shuffle)


@registry.readers("spacy_rhetoric.PMCSentsCorpus.v1")
def pmc_sents_corpus(path: Path, limit: int = 0, shuffle: bool = False,
                     group_by: str = "article") -> CorpusReader:
    """PMC-Sents-FULL ``.jsonl``: one Example per article (or per run of
    lines / per line, see ``group_by``)."""
    return _DocCorpus("PMC-Sents-FULL", read_pmc_sents, path, limit=limit, shuffle=shuffle,
                      group_by=group_by)


@registry.readers("spacy_rhetoric.CitationIntentCorpus.v1")
def citation_intent_corpus(path: Path, limit: int = 0, shuffle: bool = False) -> CorpusReader:
    """SciCite / ACL-ARC JSON lines: one single-sentence Example per record."""
    return _DocCorpus("citation intent", read_citation_intent, path, limit=limit, shuffle=shuffle)


@registry.readers("spacy_rhetoric.SciSummCorpus.v1")
def scisumm_corpus(path: Path, limit: int = 0, shuffle: bool = False) -> CorpusReader:
    """CL-SciSumm topics (one topic dir, a dir of topics, or cl-scisumm/):
    one Example per reference paper, with sids, sections and the paper id
    (no rhetorical labels)."""
    return _DocCorpus("CL-SciSumm", read_reference_docs, path, limit=limit, shuffle=shuffle)


@registry.readers("spacy_rhetoric.PaperCorpus.v1")
def paper_corpus(path: Path, format: str = "auto", splitter: str = "sentencizer", limit: int = 0,
                 shuffle: bool = False) -> CorpusReader:
    """Full-text papers (a file or a folder; ``format`` auto, tei, jats,
    s2orc, text, pdf or clscisumm, see ``readers.papers``): one Example per paper
    with sentence boundaries, headings, paragraphs, title, citation spans
    and the file stem as doc id (no rhetorical labels)."""
    return _DocCorpus("papers", read_papers, path, limit=limit, shuffle=shuffle, fmt=format,
                      splitter=splitter)


@registry.readers("spacy_rhetoric.AZCorpus.v1")
def az_corpus(path: Path, limit: int = 0, shuffle: bool = False) -> CorpusReader:
    """Argumentative Zoning ``.annot`` papers (AZ-CL; a file or a folder,
    ``readers.az``): one Example per paper with headings, paragraphs, title,
    citation spans, the zone as ``fine_label`` and the coarse gold labels."""
    return _DocCorpus("AZ-CL", read_az, path, limit=limit, shuffle=shuffle)


def sentence_examples(nlp: Language, doc: Doc, label_field: str = extensions.LABEL) -> Iterator[Example]:
    """One Example per sentence of ``doc`` that has a value for
    ``label_field``: the reference is the sentence as its own Doc
    (``common.labelled_sentence_docs``), the predicted side ``nlp.make_doc``
    of its text."""
    for ref in labelled_sentence_docs([doc], label_field):
        yield Example(nlp.make_doc(ref.text), ref)


class SentenceCorpus:
    def __init__(self, path: Union[str, Path], label_field: str = extensions.LABEL,
                 limit: int = 0, shuffle: bool = False):
        self.path = Path(path)
        self.label_field = label_field
        self.limit = int(limit)
        self.shuffle = bool(shuffle)

    def docs(self, nlp: Language) -> Iterator[Doc]:
        for file in spacy_files(self.path):
            yield from extensions.docbin_docs(DocBin().from_disk(file), nlp.vocab)

    def __call__(self, nlp: Language) -> Iterator[Example]:
        examples = (eg for doc in self.docs(nlp) for eg in sentence_examples(nlp, doc, self.label_field))
        yield from shuffle_and_limit(examples, shuffle=self.shuffle, limit=self.limit)


@registry.readers("spacy_rhetoric.SentenceCorpus.v1")
def sentence_corpus(path: Path, label_field: str = "label", limit: int = 0,
                    shuffle: bool = False) -> CorpusReader:
    """A ``.spacy`` DocBin (or a directory of them) as one Example per
    labelled sentence."""
    return SentenceCorpus(path, label_field=label_field, limit=limit, shuffle=shuffle)
