"""The labeling pipeline of a build: ``rhetoric_single_sentence`` + the
English parser + ``rhetoric_phrase_labeler``, and the record written for each
labeled sentence."""
from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from .. import extensions as ext
from ..jobs.settings import import_code
from ..pipeline import single_sentence  # noqa: F401  registers rhetoric_single_sentence
from ..util import load_parser
from .settings import LabelSettings, PhrasePairs

LABELER_FACTORY = "rhetoric_phrase_labeler"


def build_nlp(settings: LabelSettings, phrases: PhrasePairs) -> Language:
    """``rhetoric_single_sentence`` + the English parser +
    ``rhetoric_phrase_labeler`` initialized from ``phrases``: every text given
    to the pipeline is one sentence, kept whole."""
    import_code(settings.code)
    ext.install_extensions()
    nlp = load_parser(settings.parser, exclude=list(settings.exclude))
    nlp.add_pipe("rhetoric_single_sentence", first=True)
    min_length = settings.min_phrase_length or settings.n
    labeler = nlp.add_pipe(LABELER_FACTORY, config={
        "n": settings.n, "keep_short": min_length < settings.n, "min_length": min(min_length, settings.n),
    })
    labeler.initialize(nlp=nlp, phrases=list(phrases))
    return nlp


def labeled_record(doc: Doc, meta: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], int]:
    """The output record for a labeled sentence Doc (None if unlabeled) and
    the Doc's word count (non-space tokens)."""
    n_words = sum(1 for t in doc if not t.is_space)
    sents = list(doc.sents)
    if len(sents) != 1:
        raise RuntimeError(
            f"sentence {meta.get('paper_id')}#{meta.get('index')} came out of the pipeline as "
            f"{len(sents)} sentences; preset sentence boundaries were not respected"
        )
    sent = sents[0]
    label = sent._.phrase_label
    if label is None:
        return None, n_words
    match = sent._.phrase_match
    rec = dict(meta)
    rec["label"] = label
    rec["ngram"] = match.text if match is not None else None
    rec["ngram_start"] = int(match.start) if match is not None else None
    rec["ngram_end"] = int(match.end) if match is not None else None
    return rec, n_words


def label_sentences(nlp: Language, sentences: Sequence[Dict[str, Any]], *,
                    batch_size: int = 256) -> Tuple[List[Dict[str, Any]], int, int]:
    """Label one input's sentences in this process: (records, n_sentences, n_words)."""
    items = [(s["text"], s) for s in sentences if s["text"]]
    records, n_words = [], 0
    for doc, meta in nlp.pipe(items, as_tuples=True, batch_size=batch_size):
        rec, words = labeled_record(doc, meta)
        n_words += words
        if rec is not None:
            records.append(rec)
    return records, len(items), n_words
