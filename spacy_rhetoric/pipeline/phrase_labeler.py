"""``rhetoric_phrase_labeler``: distant supervision by labelled phrase n-grams.

Method (Ishikawa et al., SciToricsBERT, Sections 3.1-3.2): every phrase of a
labelled phrase list is lemmatized and cut into n-grams of ``n`` lemmas
(default 5); n-grams that carry more than one label are dropped. A sentence
inherits an n-gram's label when (i) it contains the n-gram and (ii) the
matched n-gram contains the sentence's dependency root (``sent.root``).

Details of this implementation:

* **Keys.** Phrases are run through the pipeline's own tokenizer and the
  components before the labeler (so the lemmas come from the same
  lemmatizer as the text's), and each token becomes its lowercased lemma
  (``attr="LEMMA"``; ``"LOWER"``, ``"NORM"`` and ``"ORTH"`` match surface
  forms and need only the tokenizer). Matching compares the same key on the
  document's tokens, so "Table 2 shows" (``Table`` tagged PROPN keeps its
  case as a lemma) still matches "table 2 shows".
* **Placeholders.** The Iwatsuki database writes slots as ``*`` and replaces
  citations and formulas by ``cite-`` / ``math-``; raw text has neither, so
  these ``placeholders`` split a phrase into segments and no n-gram spans
  one. Each segment is then cut like a phrase.
* **Short phrases.** A segment shorter than ``n`` tokens is kept whole when
  ``keep_short`` is true and it has at least ``min_length`` tokens
  (default 2: a single word such as "the" is no evidence of a function);
  otherwise it is dropped.
* **Ambiguity.** After cutting, an n-gram listed with more than one label is
  dropped; ``labeler.stats`` counts them (and everything else dropped).
* **Matching.** Condition (ii) means only the windows that contain the root
  can qualify, so the labeler looks up exactly those: for every key length
  L in the table, the L windows of the sentence that cover ``sent.root``.
  That is ``sum(L)`` dictionary look-ups per sentence (15 for lengths
  1..5), independent of the table size, and gives the same result as
  matching the whole sentence and filtering by the root.
* **Several qualifying n-grams** in one sentence: the longest wins, then the
  one that starts first, then the label that sorts first.
  ``sent._.phrase_label`` is the label, ``sent._.phrase_match`` the matched
  n-gram span.
* ``overwrite=False`` keeps labels a sentence already has (e.g. from an
  earlier labeler); ``True`` replaces them, clearing unmatched sentences.

The table serializes with ``to_disk``/``to_bytes`` (``cfg`` + ``ngrams.jsonl``,
span_ruler style), so ``nlp.to_disk`` -> ``spacy.load`` labels identically.
"""
import weakref
from collections import Counter
from functools import partial
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import SimpleFrozenList, registry
from wasabi import msg

from ..errors import RhetoricError
from ..extensions import (
    LABEL,
    PHRASE_LABEL,
    PHRASE_MATCH,
    get_span_value,
    install_extensions,
    labelled_spans,
    set_span_values,
)
from ..readers.phrases import read_phrases
from .phrase_table import DEFAULT_PLACEHOLDERS, NGram, build_ngram_table, check_phrase_pairs

PhraseSource = Union[str, Path, Sequence[Sequence[str]]]

ATTRS = ("LEMMA", "LOWER", "NORM", "ORTH")
@Language.factory(
    "rhetoric_phrase_labeler",
    assigns=["span._.phrase_label", "span._.phrase_match"],
    requires=["token.dep", "token.lemma"],
    default_config={
        "n": 5,
        "keep_short": True,
        "min_length": 2,
        "attr": "LEMMA",
        "placeholders": DEFAULT_PLACEHOLDERS,
        "overwrite": True,
        "scorer": {"@scorers": "spacy_rhetoric.phrase_labeler_scorer.v1"},
    },
    default_score_weights={"phrase_coverage": 0.0, "phrase_precision": 0.0},
)
def make_phrase_labeler(
    nlp: Language,
    name: str,
    n: int,
    keep_short: bool,
    min_length: int,
    attr: str,
    placeholders: List[str],
    overwrite: bool,
    scorer: Optional[Callable],
) -> "PhraseLabeler":
    """Label sentences by labelled phrase n-grams that contain the sentence
    root. The n-gram table is built by ``initialize(phrases=...)``."""
    return PhraseLabeler(
        nlp.vocab,
        name,
        nlp=nlp,
        n=n,
        keep_short=keep_short,
        min_length=min_length,
        attr=attr,
        placeholders=placeholders,
        overwrite=overwrite,
        scorer=scorer,
    )


class PhraseLabeler(Pipe):
    def __init__(
        self,
        vocab,
        name: str = "rhetoric_phrase_labeler",
        *,
        nlp: Optional[Language] = None,
        n: int = 5,
        keep_short: bool = True,
        min_length: int = 2,
        attr: str = "LEMMA",
        placeholders: Sequence[str] = tuple(DEFAULT_PLACEHOLDERS),
        overwrite: bool = True,
        scorer: Optional[Callable] = None,
    ) -> None:
        install_extensions()
        attr = str(attr).upper()
        if attr not in ATTRS:
            raise RhetoricError(
                f"[{name}] attr must be one of {', '.join(ATTRS)}, got {attr!r}"
            )
        if n < 1:
            raise RhetoricError(f"[{name}] n must be >= 1, got {n}")
        if min_length < 1:
            raise RhetoricError(f"[{name}] min_length must be >= 1, got {min_length}")
        self.vocab = vocab
        self.name = name
        # The pipeline this pipe belongs to (a weak reference: no cycle, and
        # dropped when pickling), used by initialize() when no nlp is given.
        self._nlp_ref = weakref.ref(nlp) if nlp is not None else None
        self.overwrite = overwrite
        self.scorer = scorer
        # Settings that shape the table are stored with it (to_disk).
        self.cfg: Dict[str, Any] = {
            "n": int(n),
            "keep_short": bool(keep_short),
            "min_length": int(min_length),
            "attr": attr,
            "placeholders": list(placeholders),
        }
        self.stats: Dict[str, int] = {}
        self._set_table({})

    def __reduce__(self):
        # Pickle everything but the weak reference to the pipeline.
        state = {k: v for k, v in self.__dict__.items() if k != "_nlp_ref"}
        return (_restore_labeler, (state,))

    # ------------------------------------------------------------------ table
    @property
    def table(self) -> Dict[NGram, str]:
        """The n-gram -> label table (read-only view: rebuild with initialize)."""
        return dict(self._table)

    @property
    def labels(self) -> Tuple[str, ...]:
        return tuple(sorted(set(self._table.values())))

    @property
    def label_data(self):
        return list(self.labels)

    def _set_table(self, table: Dict[NGram, str]) -> None:
        self._table = dict(table)
        # Key lengths, longest first: the tie rule prefers longer n-grams.
        self._lengths = sorted({len(k) for k in self._table}, reverse=True)
        self._max_len = self._lengths[0] if self._lengths else 0

    def initialize(
        self,
        get_examples: Optional[Callable[[], Iterable[Example]]] = None,
        *,
        nlp: Optional[Language] = None,
        phrases: Optional[PhraseSource] = None,
    ) -> None:
        """Build the n-gram table from ``phrases``: a phrase file, a directory
        of them, a CFS3 ``5gram_dict.json`` (see readers.phrases), or a list of
        ``(label, phrase)`` pairs. ``nlp`` supplies the tokenizer and the
        lemmatizer (spaCy passes it in ``nlp.initialize``; by default the
        pipeline the pipe was added to)."""
        if nlp is None and self._nlp_ref is not None:
            nlp = self._nlp_ref()
        if phrases is None:
            raise RhetoricError(
                f"[{self.name}] needs a phrase list: call "
                f"nlp.get_pipe('{self.name}').initialize(phrases=PATH_OR_PAIRS, nlp=nlp) or set "
                f"[initialize.components.{self.name}] phrases = \"path/to/phrases\" in the config"
            )
        if isinstance(phrases, (str, Path)):
            pairs, n_skipped = read_phrases(phrases)
            source = str(phrases)
        else:
            pairs, n_skipped = check_phrase_pairs(phrases, self.name), 0
            source = f"{len(pairs)} (label, phrase) pairs"
        if not pairs:
            raise RhetoricError(f"[{self.name}] the phrase list {source} holds no phrases")
        table, stats = build_ngram_table(
            pairs,
            nlp=nlp,
            vocab=self.vocab,
            component=self.name,
            **{k: self.cfg[k] for k in ("n", "keep_short", "min_length", "attr", "placeholders")},
        )
        stats["phrases_skipped_malformed"] = n_skipped
        if not table:
            raise RhetoricError(
                f"[{self.name}] no n-gram is left from {source}: its {stats['phrases']} phrases give no "
                f"segment of n={self.cfg['n']} tokens ({stats['segments_too_short']} too short, "
                f"{stats['ngrams_multilabel']} multi-label n-grams dropped); use a smaller n (label --n)"
            )
        self.stats = stats
        self._set_table(table)
        msg.info(
            f"[{self.name}] {stats['ngrams']} n-grams, {len(self.labels)} labels from {source} "
            f"({stats['phrases']} phrases; dropped {stats['ngrams_multilabel']} multi-label "
            f"n-grams, {stats['segments_too_short']} too-short segments, "
            f"{n_skipped} malformed records)"
        )

    # --------------------------------------------------------------- matching
    def token_key(self) -> Callable:
        """The function from a Token to the string the n-gram table is keyed
        by (the ``attr`` setting: lower-cased lemma, LOWER, NORM or ORTH)."""
        attr = self.cfg["attr"]
        if attr == "LEMMA":
            return lambda t: t.lemma_.lower()
        if attr == "LOWER":
            return lambda t: t.lower_
        if attr == "NORM":
            return lambda t: t.norm_
        return lambda t: t.orth_

    def _check_doc(self, doc: Doc) -> None:
        if not self._table:
            raise RhetoricError(
                f"[{self.name}] has no n-grams: it was not initialized. Call "
                f"nlp.initialize() with [initialize.components.{self.name}] phrases set, or "
                f"nlp.get_pipe('{self.name}').initialize(phrases=..., nlp=nlp)"
            )
        if not doc.has_annotation("DEP"):
            raise RhetoricError(
                f"[{self.name}] needs a dependency parse (the rule checks that the matched "
                f"n-gram holds the sentence root), but the Doc has none: put a trained parser "
                f"before it, e.g. nlp = spacy_rhetoric.load_parser('en_core_web_sm'); "
                f"nlp.add_pipe('{self.name}')"
            )
        if self.cfg["attr"] == "LEMMA" and not doc.has_annotation("LEMMA"):
            raise RhetoricError(
                f"[{self.name}] matches on lemmas (attr='LEMMA') but the Doc has none: put a "
                f"lemmatizer before it (as in en_core_web_sm) or use attr='LOWER'"
            )

    def match_sentence(self, sent: Span, key=None) -> Optional[Tuple[str, int, int]]:
        """``(label, start, end)`` of the n-gram chosen for ``sent`` or None."""
        if key is None:
            key = self.token_key()
        doc = sent.doc
        root = sent.root.i
        s_start, s_end = sent.start, sent.end
        max_len = self._max_len
        lo = max(s_start, root - max_len + 1)
        hi = min(s_end, root + max_len)
        keys = [key(doc[i]) for i in range(lo, hi)]
        table = self._table
        for length in self._lengths:  # longest first
            # Windows [start, start + length) inside the sentence covering root,
            # earliest start first.
            first = max(lo, root - length + 1)
            last = min(root, hi - length)
            for start in range(first, last + 1):
                label = table.get(tuple(keys[start - lo : start - lo + length]))
                if label is not None:
                    return label, start, start + length
        return None

    def __call__(self, doc: Doc) -> Doc:
        if len(doc) == 0:
            return doc
        self._check_doc(doc)
        key = self.token_key()
        sents = list(doc.sents)
        labels: List[Optional[str]] = []
        matches: List[Optional[Tuple[int, int]]] = []
        for sent in sents:
            found = self.match_sentence(sent, key)
            if not self.overwrite:
                existing = get_span_value(sent, PHRASE_LABEL)
                if existing is not None:
                    labels.append(existing)
                    old = get_span_value(sent, PHRASE_MATCH)
                    matches.append((old.start, old.end) if old is not None else None)
                    continue
            if found is None:
                labels.append(None)
                matches.append(None)
            else:
                labels.append(found[0])
                matches.append((found[1], found[2]))
        set_span_values(doc, PHRASE_LABEL, sents, labels)
        set_span_values(doc, PHRASE_MATCH, sents, matches)
        return doc

    # ---------------------------------------------------------- serialization
    def _table_rows(self) -> List[Dict[str, Any]]:
        return [{"ngram": list(k), "label": v} for k, v in sorted(self._table.items())]

    def _cfg_data(self) -> Dict[str, Any]:
        return {**self.cfg, "stats": self.stats}

    def _load_cfg(self, data: Dict[str, Any]) -> None:
        data = dict(data)
        self.stats = dict(data.pop("stats", {}))
        self.cfg.update(data)

    def _load_rows(self, rows: Iterable[Dict[str, Any]]) -> None:
        self._set_table({tuple(r["ngram"]): r["label"] for r in rows})

    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        serializers = {
            "cfg": lambda: srsly.json_dumps(self._cfg_data()),
            "ngrams": lambda: srsly.json_dumps(self._table_rows()),
        }
        return util.to_bytes(serializers, exclude)

    def from_bytes(
        self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()
    ) -> "PhraseLabeler":
        deserializers = {
            "cfg": lambda b: self._load_cfg(srsly.json_loads(b)),
            "ngrams": lambda b: self._load_rows(srsly.json_loads(b)),
        }
        util.from_bytes(bytes_data, deserializers, exclude)
        return self

    def to_disk(
        self, path: Union[str, Path], *, exclude: Iterable[str] = SimpleFrozenList()
    ) -> None:
        path = util.ensure_path(path)
        serializers = {
            "cfg": lambda p: srsly.write_json(p, self._cfg_data()),
            "ngrams.jsonl": lambda p: srsly.write_jsonl(p, self._table_rows()),
        }
        util.to_disk(path, serializers, exclude)

    def from_disk(
        self, path: Union[str, Path], *, exclude: Iterable[str] = SimpleFrozenList()
    ) -> "PhraseLabeler":
        path = util.ensure_path(path)
        deserializers = {
            "cfg": lambda p: self._load_cfg(srsly.read_json(p)),
            "ngrams.jsonl": lambda p: self._load_rows(srsly.read_jsonl(p)),
        }
        util.from_disk(path, deserializers, exclude)
        return self


def _restore_labeler(state: Dict[str, Any]) -> PhraseLabeler:
    labeler = PhraseLabeler.__new__(PhraseLabeler)
    labeler.__dict__.update(state)
    labeler._nlp_ref = None
    return labeler


# --------------------------------------------------------------------- scorer
def score_phrase_labels(
    examples: Iterable[Example], *, gold_field: str = LABEL, **kwargs
) -> Dict[str, Any]:
    """Coverage and precision of ``phrase_label``.

    * ``phrase_coverage``: labelled sentences / sentences of the predicted docs.
    * ``phrase_precision`` (only when some reference sentences carry gold
      labels in ``gold_field``): among labelled sentences whose evidence
      n-gram falls inside a gold-labelled reference sentence (aligned by
      character offset, so predicted and gold sentence boundaries may
      differ), the share whose phrase label equals the gold label.
    * ``phrase_per_type``: per label ``{"n": labelled sentences, "p":
      precision or None}``.
    """
    n_sents = n_labeled = n_judged = n_correct = 0
    per_n: Counter = Counter()
    per_judged: Counter = Counter()
    per_correct: Counter = Counter()
    for eg in examples:
        pred = eg.predicted
        if len(pred) == 0:
            continue
        ref = eg.reference
        gold = [
            (ref[s].idx, ref[e - 1].idx + len(ref[e - 1]), label)
            for s, e, label in labelled_spans(ref, field=gold_field)
            if e > s
        ]
        labeled = labelled_spans(pred, field=PHRASE_LABEL)
        if pred.has_annotation("SENT_START") or pred.has_annotation("DEP"):
            n_sents += sum(1 for _ in pred.sents)
        else:
            n_sents += 1
        match_of = {(s, e): m for s, e, m in labelled_spans(pred, field=PHRASE_MATCH)}
        for s, e, label in labeled:
            n_labeled += 1
            per_n[label] += 1
            match = match_of.get((s, e))
            char = match[0].idx if match else pred[s].idx
            gold_label = next((g for gs, ge, g in gold if gs <= char < ge), None)
            if gold_label is None:
                continue
            n_judged += 1
            per_judged[label] += 1
            if gold_label == label:
                n_correct += 1
                per_correct[label] += 1
    scores: Dict[str, Any] = {
        "phrase_coverage": n_labeled / n_sents if n_sents else 0.0,
        "phrase_per_type": {
            label: {
                "n": per_n[label],
                "p": per_correct[label] / per_judged[label] if per_judged[label] else None,
            }
            for label in sorted(per_n)
        },
    }
    if n_judged:
        scores["phrase_precision"] = n_correct / n_judged
    return scores


@registry.scorers("spacy_rhetoric.phrase_labeler_scorer.v1")
def make_phrase_labeler_scorer(gold_field: str = LABEL) -> Callable:
    # A partial of a module-level function, so the pipe pickles (n_process>1
    # with the "spawn" start method).
    return partial(score_phrase_labels, gold_field=gold_field)
