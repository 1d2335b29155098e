"""What annotating one input's Docs does, wherever it runs (this process,
a forked worker of ``jobs.pool_inputs``, a Dask worker, the parent of an
``nlp.pipe`` stream): the pipeline over Docs whose sentence starts are
preset, the check that it kept them, and the input's records (one per
sentence, ``records.doc_records``), word count and, with ``--spacy``, its
DocBin bytes. ``annotate.annotate_corpus`` runs the inputs."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc, DocBin

from .. import extensions as ext
from ..extensions import docbin_docs
from ..jobs import stream_inputs
from ..jobs.common import CorpusBuildError
from ..jobs.inputs import InputFile
from ..readers.common import sentence_splitters
from .records import doc_records

# ``settings`` below: an ``annotate.AnnotateSettings`` (its ``vectors``, ``spacy``,
# ``n_process``, ``batch_size``); typed Any so this module does not import the run's.
Settings = Any


def sentence_records(doc: Doc, *, vectors: bool = False) -> List[Dict[str, Any]]:
    """One record per sentence of an annotated Doc (``RECORD_FIELDS``):
    char offsets into ``doc.text`` (``doc.text[start_char:end_char] ==
    text``), the classifier's label and scores, the fine classifier's, the
    phrase labeler's label and evidence n-gram; None where a component is
    absent or gave nothing (whitespace-only sentences). The written records
    also carry ``input``, the key (path relative to the folder given) of the
    file the paper came from; paper ids are unique in the corpus
    (``readers.papers.paper_ids``). Built by ``records.doc_records``."""
    records = doc_records(doc, vector=vectors)
    if vectors:
        for rec in records:
            rec["vector"] = rec["vector"].tolist() if rec["vector"] is not None else None
    return records


def sentence_starts(doc: Doc) -> List[int]:
    return [sent.start for sent in doc.sents] if len(doc) else []


def doc_result(doc: Doc, starts: List[int], settings: Settings) -> Tuple[List[Dict[str, Any]], int, Optional[Doc]]:
    """(records, words, the Doc if it is kept) of one annotated Doc; an error
    if the pipeline moved its preset sentence boundaries."""
    after = sentence_starts(doc)
    if after != starts:
        raise CorpusBuildError(
            f"paper {ext.get_doc_value(doc, ext.DOC_ID)}: the pipeline changed its preset sentence boundaries "
            f"({len(starts)} -> {len(after)} sentences); a component re-splits sentences "
            "(only sentencizer/senter are disabled; a parser keeps preset boundaries)"
        )
    n_words = sum(1 for token in doc if not token.is_space)
    return sentence_records(doc, vectors=settings.vectors), n_words, doc if settings.spacy else None


def docbin_bytes(docs: Sequence[Doc]) -> bytes:
    return DocBin(store_user_data=True, docs=docs).to_bytes()


def annotate_docs(nlp: Language, docs: Sequence[Doc], settings: Settings,
                  batch_size: int) -> Tuple[List[Dict[str, Any]], int, Optional[bytes]]:
    """Annotate the Docs of one input in this process: (records, words,
    DocBin bytes of the annotated Docs if ``settings.spacy``)."""
    from ..long_docs import process_long_doc

    starts = [sentence_starts(doc) for doc in docs]
    short = [doc for doc in docs if not is_long(nlp, doc)]
    done = iter(nlp.pipe(short, batch_size=batch_size, disable=sentence_splitters(nlp)))
    results = [doc_result(process_long_doc(nlp, doc, disable=sentence_splitters(nlp)) if is_long(nlp, doc)
                          else next(done), s, settings) for doc, s in zip(docs, starts)]
    return _combine(results, settings)


def is_long(nlp: Language, doc: Doc) -> bool:
    """A paper longer than ``long_docs.long_threshold`` (100,000 characters,
    or ``nlp.max_length`` where lower): annotated in pieces of whole
    sentences (``long_docs.process_long_doc``), in this process."""
    from ..long_docs import is_long_doc

    return is_long_doc(nlp, doc)


def _combine(results, settings: Settings) -> Tuple[List[Dict[str, Any]], int, Optional[bytes]]:
    records = [rec for recs, _, _ in results for rec in recs]
    n_words = sum(words for _, words, _ in results)
    return records, n_words, docbin_bytes([doc for _, _, doc in results]) if settings.spacy else None


def annotate_stream(nlp: Language, pending: Sequence[InputFile], settings: Settings, *,
                    read: Callable[[InputFile], Optional[List[Doc]]],
                    finish: Callable[[InputFile, List[Doc], Any], None]) -> None:
    """The pending inputs through one ordered ``nlp.pipe`` stream
    (``jobs.stream_inputs``, ``settings.n_process`` processes):
    ``read(input)`` gives its Docs (None: skipped), ``finish(input, docs,
    (records, words, DocBin bytes))`` writes its shard. A paper longer than
    ``nlp.max_length`` is annotated in this process, in pieces
    (``long_docs``)."""
    from ..long_docs import process_long_doc

    def read_items(inp: InputFile):
        docs = read(inp)
        if docs is None:
            return None
        long_done = {i: doc_result(process_long_doc(nlp, doc, disable=sentence_splitters(nlp)),
                                   sentence_starts(doc), settings)
                     for i, doc in enumerate(docs) if is_long(nlp, doc)}
        return ((docs, long_done),
                [(doc, sentence_starts(doc)) for i, doc in enumerate(docs) if i not in long_done])

    def finish_stream(inp: InputFile, payload, results) -> None:
        docs, long_done = payload
        rest = iter(results)
        ordered = [long_done[i] if i in long_done else next(rest) for i in range(len(docs))]
        finish(inp, docs, _combine(ordered, settings))

    stream_inputs(nlp, pending, read=read_items, process=lambda doc, starts: doc_result(doc, starts, settings),
                  finish=finish_stream, n_process=settings.n_process, batch_size=settings.batch_size,
                  disable=sentence_splitters(nlp),
                  # one paper per input but in a .spacy: no more processes than papers
                  max_processes=None if any(i.kind == "spacy" for i in pending) else len(pending))


def annotate_docbin(nlp: Language, docs: bytes, settings: Settings, batch_size: int):
    """A Dask task's work (``jobs.dask_tasks``): annotate the Docs of one
    input (DocBin bytes) with the worker's pipeline."""
    return annotate_docs(nlp, list(docbin_docs(DocBin(store_user_data=True).from_bytes(docs), nlp.vocab)),
                         settings, batch_size)
