"""The n-gram table of ``rhetoric_phrase_labeler``: labelled phrases cut into
n-grams of token keys (lemmas by default), computed with the same pipeline
that labels the documents; ambiguous n-grams dropped. The method and its
details are described in ``pipeline/phrase_labeler.py``; this module holds
the table construction so the component module stays about the component.
"""
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language

from ..errors import RhetoricError

NGram = Tuple[str, ...]
DEFAULT_PLACEHOLDERS = ["*", "cite-", "math-"]
# Components that only assign these never change tokens or lemmas, so they
# are skipped when the phrases are lemmatized (the parser and NER are slow).
_PARSE_ONLY_ASSIGNS = {
    "token.dep",
    "token.head",
    "token.is_sent_start",
    "token.is_sent_end",
    "doc.sents",
    "doc.ents",
    "token.ent_iob",
    "token.ent_type",
    "token.ent_kb_id",
}


# ---------------------------------------------------------------- table build
def check_phrase_pairs(phrases: Sequence[Sequence[str]], component: str) -> List[Tuple[str, str]]:
    pairs = []
    for i, item in enumerate(phrases):
        if (
            not isinstance(item, (list, tuple))
            or len(item) != 2
            or not all(isinstance(x, str) and x.strip() for x in item)
        ):
            raise RhetoricError(
                f"[{component}] phrases[{i}] must be a (label, phrase) pair of non-empty "
                f"strings, got {item!r}"
            )
        pairs.append((item[0].strip(), item[1]))
    return pairs


def split_placeholders(phrase: str, placeholders: Sequence[str]) -> List[str]:
    """Split a phrase at placeholder words into its contiguous segments."""
    holes = set(placeholders)
    segments: List[List[str]] = [[]]
    for word in phrase.split():
        if word in holes:
            segments.append([])
        else:
            segments[-1].append(word)
    return [" ".join(s) for s in segments if s]


def _lemmatizing_pipes(nlp: Language, component: str) -> List[Tuple[str, Callable]]:
    """Components before ``component`` (all of them if it is not in ``nlp``),
    minus those that only assign parses or entities."""
    pipes = []
    for name, proc in nlp.pipeline:
        if name == component:
            break
        if nlp.get_pipe_meta(name).factory == "rhetoric_phrase_labeler":
            continue
        assigns = set(nlp.get_pipe_meta(name).assigns)
        if assigns and assigns <= _PARSE_ONLY_ASSIGNS:
            continue
        pipes.append((name, proc))
    return pipes


def phrase_keys(
    texts: Sequence[str],
    *,
    nlp: Optional[Language],
    vocab=None,
    attr: str = "LEMMA",
    component: str = "rhetoric_phrase_labeler",
) -> List[List[str]]:
    """Token keys of each text, computed exactly as the labeler computes them
    on documents (same tokenizer, same lemmatizer, lowercased lemmas)."""
    attr = attr.upper()
    if nlp is None:
        if attr == "LEMMA":
            raise RhetoricError(
                f"[{component}] lemmatizing the phrases needs the pipeline: pass nlp= to "
                f"initialize (nlp.initialize() does this), or use attr='LOWER'"
            )
        # Tokenizer only. Keys are strings, so the labeler's own vocab is not
        # needed (a bare Vocab() has no lexical attribute getters).
        from spacy.lang.en import English

        nlp = English()
    docs = [nlp.make_doc(t) for t in texts]
    if attr == "LEMMA":
        for name, proc in _lemmatizing_pipes(nlp, component):
            docs = list(proc.pipe(docs))
        if docs and not any(d.has_annotation("LEMMA") for d in docs if len(d)):
            raise RhetoricError(
                f"[{component}] matches on lemmas (attr='LEMMA') but the pipeline has no "
                f"lemmatizer before it ({', '.join(nlp.pipe_names) or 'no components'}): use a "
                f"pipeline with one (spacy_rhetoric.load_parser('en_core_web_sm')) or attr='LOWER'"
            )
    out = []
    for doc in docs:
        if attr == "LEMMA":
            keys = [t.lemma_.lower() for t in doc if not t.is_space]
        elif attr == "LOWER":
            keys = [t.lower_ for t in doc if not t.is_space]
        elif attr == "NORM":
            keys = [t.norm_ for t in doc if not t.is_space]
        else:
            keys = [t.orth_ for t in doc if not t.is_space]
        if "" in keys:
            raise RhetoricError(
                f"[{component}] the phrase {doc.text!r} has tokens without a {attr} value: "
                f"the pipeline does not set that attribute"
            )
        out.append(keys)
    return out


def build_ngram_table(
    pairs: Sequence[Tuple[str, str]],
    *,
    nlp: Optional[Language],
    vocab=None,
    n: int = 5,
    keep_short: bool = True,
    min_length: int = 2,
    attr: str = "LEMMA",
    placeholders: Sequence[str] = tuple(DEFAULT_PLACEHOLDERS),
    component: str = "rhetoric_phrase_labeler",
) -> Tuple[Dict[NGram, str], Dict[str, int]]:
    """Cut labelled phrases into n-grams of token keys and drop ambiguous ones.

    Returns ``(table, stats)``; ``stats`` counts phrases, segments, segments
    dropped for being too short, distinct n-grams kept, and n-grams dropped
    because they carry more than one label.
    """
    segments: List[str] = []
    seg_labels: List[str] = []
    for label, phrase in pairs:
        for seg in split_placeholders(phrase, placeholders):
            segments.append(seg)
            seg_labels.append(label)
    unique_segments = sorted(set(segments))
    keys_of = dict(
        zip(
            unique_segments,
            phrase_keys(unique_segments, nlp=nlp, vocab=vocab, attr=attr, component=component),
        )
    )
    labels_of: Dict[NGram, set] = defaultdict(set)
    too_short = 0
    for seg, label in zip(segments, seg_labels):
        keys = keys_of[seg]
        if len(keys) >= n:
            grams = [tuple(keys[i : i + n]) for i in range(len(keys) - n + 1)]
        elif keep_short and len(keys) >= min_length:
            grams = [tuple(keys)]
        else:
            too_short += 1
            continue
        for gram in grams:
            labels_of[gram].add(label)
    table = {g: next(iter(ls)) for g, ls in labels_of.items() if len(ls) == 1}
    stats = {
        "phrases": len(pairs),
        "segments": len(segments),
        "segments_too_short": too_short,
        "ngrams_listed": len(labels_of),
        "ngrams_multilabel": len(labels_of) - len(table),
        "ngrams": len(table),
    }
    return table, stats
