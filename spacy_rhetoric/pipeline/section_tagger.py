"""``rhetoric_section_tagger``: the section category of every sentence, from
the heading of the section it is in.

Categories (``spacy_rhetoric.section_headings.CATEGORIES``): COSAEMB's five
(§3.5) ``introduction, related work, method, results, conclusion`` plus
``title``, ``abstract`` and ``other`` (back matter such as acknowledgements,
references and appendices, junk, and headings the model is unsure about).

Input: the raw heading of each sentence, the per-sentence field ``heading``
(``sent._.rhetoric_heading``, written by the paper readers); a sentence
without one falls back to its ``section`` value (what the CL-SciSumm reader
writes: the raw ``<SECTION title>``, ``abstract`` or ``title``), and a
sentence with neither that is the paper's title (``doc._.rhetoric_title``)
counts as the title. Consecutive sentences with the same heading are one
section. Output: ``sent._.rhetoric_section`` (field ``section``, replacing
what was there) and the span group ``doc.spans[spans_key]`` ("sections"):
one span per run of consecutive sentences with the same category, label =
category, the group's ``attrs["headings"]`` the raw headings inside each span.

One heading is decided in this order (:meth:`SectionTagger.tag_headings`):

1. after a back-matter heading (a rule with ``back_matter``: references,
   acknowledgements, appendix...) every heading is ``other``;
2. a keyword rule (``assets/section_rules.json`` plus the user's
   ``rules_path``). For a sub-heading (numbered ``4.2 ...``, or unnumbered
   after a numbered heading) only a rule matching at the start of its text
   decides ("4.2 Results on WMT" -> results, but "2.1 Rule-based methods"
   under "2 Related Work" is not decided by "methods");
3. a sub-heading that is not decided inherits: ``4.2 ...`` the category of
   ``4 ...`` (or of ``4.2`` for ``4.2.1``), an unnumbered heading that of the
   last numbered heading;
4. otherwise, with ``unmatched = "unknown"`` (the default), the explicit
   outcome ``unknown``: a topical heading ("Electrochemical Performance",
   "2.2 Extrinsic Effects") says nothing about what its sentences do, and a
   section-aware classifier then reads the sentences alone; between the
   paper's first introduction, related-work, method or results heading and
   its conclusion or back matter such a heading is ``body``
   (``section_headings.body_between``): the part of the paper where its own
   work is described, whatever the field calls it ("2 Structure of the
   Literature Graph", "3 Theory"); the function classifier reads ``body``
   as ``unknown`` (``section_headings.feature_section``). With
   ``unmatched = "model"`` the learned
   classifier decides (char n-gram TF-IDF + logistic regression, trained on
   the FeRoSA headings; ``model_path`` or the packaged model), ``other`` when
   its probability is below ``threshold``. It is not the default because
   FeRoSA files almost every topical heading under method, so the model calls
   them method with high confidence, and a classifier that trusts the
   section then calls results and background sentences method.

``tagger.tag_heading("4.1 Experimental Results")`` decides one heading out of
context. ``initialize(headings_path=...)`` retrains the classifier from a
FeRoSA-style TSV; rules, classifier and settings are saved with the pipeline
(JSON, no pickle).
"""
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span, SpanGroup
from spacy.training import Example
from spacy.util import SimpleFrozenList, registry
from thinc.api import Config

from ..errors import RhetoricError
from ..extensions import (
    HEADING,
    SECTION,
    TITLE,
    clear_field,
    get_doc_value,
    install_extensions,
    labelled_spans,
    set_span_values,
)
from ..readers.ferosa import read_ferosa_headings
from ..section_headings import (
    BODY,
    CATEGORIES,
    OTHER,
    UNKNOWN,
    Heading,
    HeadingClassifier,
    HeadingRules,
    body_between,
    parse_heading,
    train_heading_classifier,
)
from .function_classifier import score_function_classifier

DEFAULT_SECTION_TAGGER_CONFIG = """
[section_tagger]
rules_path = null
model_path = null
threshold = 0.5
unmatched = "unknown"
spans_key = "sections"

[section_tagger.scorer]
@scorers = "spacy_rhetoric.section_tagger_scorer.v1"
"""
UNMATCHED = (UNKNOWN, "model")
DEFAULT_SECTION_TAGGER = Config().from_str(DEFAULT_SECTION_TAGGER_CONFIG)["section_tagger"]


@Language.factory(
    "rhetoric_section_tagger",
    assigns=["doc.spans", "span._.rhetoric_section"],
    default_config=DEFAULT_SECTION_TAGGER,
    default_score_weights={
        # not trained by spacy train: its scores are reported, never used to pick a model
        "rhetoric_section_f_micro": 0.0,
        "rhetoric_section_f_macro": 0.0,
        "rhetoric_section_p_macro": 0.0,
        "rhetoric_section_r_macro": 0.0,
        "rhetoric_section_f_per_type": None,
    },
)
def make_section_tagger(
    nlp: Language,
    name: str,
    rules_path: Optional[str],
    model_path: Optional[str],
    threshold: float,
    unmatched: str,
    spans_key: str,
    scorer: Optional[Callable],
) -> "SectionTagger":
    """Create a rhetoric_section_tagger.

    rules_path (Optional[str]): a JSON file of extra keyword rules
        (``{"rules": [{"category", "pattern", "back_matter"?}]}``), tried
        before the packaged ones (on a tie the user's rule wins).
    model_path (Optional[str]): a heading classifier JSON (from
        ``scripts/build_section_model.py``); None: the packaged one.
    threshold (float): below this classifier probability a heading is "other".
    unmatched (str): what a heading no rule or parent decides gets:
        "unknown" (the explicit outcome) or "model" (the learned classifier).
    spans_key (str): the span group of the sections.
    """
    return SectionTagger(nlp.vocab, name, rules_path=rules_path, model_path=model_path,
                         threshold=threshold, unmatched=unmatched, spans_key=spans_key, scorer=scorer)


def score_section_tagger(examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
    """Sentence-level scores of the predicted ``section`` categories against
    the reference docs' ``section`` values that are categories (raw headings
    in the reference, as the CL-SciSumm reader writes them, are not gold and
    are skipped). Same definition and keys as the function classifier's
    scorer with prefix ``rhetoric_section``: ``rhetoric_section_f_micro``
    (= accuracy), ``_f_macro``, ``_p_macro``, ``_r_macro``, ``_f_per_type``."""
    gold_examples = []
    for eg in examples:
        ref = eg.reference
        spans = labelled_spans(ref, field=SECTION)
        if any(label not in CATEGORIES for _, _, label in spans):
            ref = ref.copy()
            clear_field(ref, SECTION)
            kept = [(s, e, label) for s, e, label in spans if label in CATEGORIES]
            set_span_values(ref, SECTION, [ref[s:e] for s, e, _ in kept], [label for _, _, label in kept])
            eg = Example(eg.predicted, ref)
        gold_examples.append(eg)
    return score_function_classifier(gold_examples, label_field=SECTION, gold_field=SECTION)


@registry.scorers("spacy_rhetoric.section_tagger_scorer.v1")
def make_section_tagger_scorer() -> Callable:
    return score_section_tagger


class SectionTagger(Pipe):
    def __init__(
        self,
        vocab,
        name: str = "rhetoric_section_tagger",
        *,
        rules_path: Optional[Union[str, Path]] = None,
        model_path: Optional[Union[str, Path]] = None,
        threshold: float = 0.5,
        unmatched: str = UNKNOWN,
        spans_key: str = "sections",
        scorer: Optional[Callable] = score_section_tagger,
    ) -> None:
        install_extensions()
        if not 0.0 <= float(threshold) <= 1.0:
            raise RhetoricError(f"[{name}] threshold must be in [0, 1], got {threshold}")
        if unmatched not in UNMATCHED:
            raise RhetoricError(f"[{name}] unmatched must be one of {UNMATCHED}, got {unmatched!r}")
        if not isinstance(spans_key, str) or not spans_key:
            raise RhetoricError(f"[{name}] spans_key must be a non-empty string, got {spans_key!r}")
        self.vocab = vocab
        self.name = name
        self.scorer = scorer
        self.cfg: Dict[str, Any] = {"threshold": float(threshold), "unmatched": unmatched, "spans_key": spans_key}
        user_rules = HeadingRules.from_file(rules_path) if rules_path else HeadingRules()
        self.rules: HeadingRules = user_rules + HeadingRules.packaged()
        self.model: HeadingClassifier = (
            HeadingClassifier.from_disk(model_path) if model_path else HeadingClassifier.packaged()
        )

    @property
    def threshold(self) -> float:
        return self.cfg["threshold"]

    @property
    def spans_key(self) -> str:
        return self.cfg["spans_key"]

    @property
    def unmatched(self) -> str:
        return self.cfg.get("unmatched", "model")

    @property
    def labels(self) -> Tuple[str, ...]:
        return CATEGORIES + ((UNKNOWN, BODY) if self.unmatched == UNKNOWN else ())

    # -------------------------------------------------------------- headings
    def tag_heading(self, heading: str) -> str:
        """The category of one heading on its own (no parent, no back matter
        before it): a rule, else ``unknown`` (``unmatched = "model"``: the
        classifier, "other" below threshold)."""
        return self.tag_headings([heading])[0]

    def tag_headings(self, headings: Sequence[Optional[str]]) -> List[Optional[str]]:
        """Categories of the section headings of one paper, in reading order
        (None for a missing heading, which gets None and changes nothing).
        See the module docstring for the order of decisions."""
        parsed: List[Optional[Heading]] = [
            parse_heading(h) if h is not None and str(h).strip() else None for h in headings
        ]
        matches = [self.rules.match(p.model_text) if p is not None else None for p in parsed]
        predicted = self._predict({p.model_text for p, m in zip(parsed, matches) if p is not None and m is None}
                                  if self.unmatched == "model" else ())
        out: List[Optional[str]] = []
        by_number: Dict[Tuple[str, ...], str] = {}
        last_numbered: Optional[str] = None
        in_back_matter = False
        for heading, match in zip(parsed, matches):
            if heading is None:
                out.append(None)
                continue
            parent = _parent_category(heading.number, by_number)
            if parent is None and not heading.number:
                parent = last_numbered  # an unnumbered sub-heading of a numbered section
            if in_back_matter:
                category = OTHER
            elif match is not None and (parent is None or match.start == 0 or match.back_matter):
                category = match.category
                in_back_matter = match.back_matter
            elif parent is not None:
                category = parent
            else:
                category = predicted.get(heading.model_text, OTHER) if self.unmatched == "model" else UNKNOWN
            if heading.number:
                by_number[heading.number] = category
                last_numbered = category
            out.append(category)
        return body_between(out) if self.unmatched == UNKNOWN else out

    def _predict(self, texts: Iterable[str]) -> Dict[str, str]:
        texts = sorted(texts)
        return {
            text: (label if prob >= self.threshold else OTHER)
            for text, (label, prob) in zip(texts, self.model.predict(texts))
        }

    # ------------------------------------------------------------- documents
    def __call__(self, doc: Doc) -> Doc:
        if len(doc) and not (doc.has_annotation("SENT_START") or doc.has_annotation("DEP")):
            raise RhetoricError(
                f"[{self.name}] needs sentence boundaries: put a sentencizer or parser before it "
                f"(nlp.add_pipe('sentencizer', before='{self.name}')) or use a reader's docs"
            )
        sents = list(doc.sents) if len(doc) else []
        headings = sentence_headings(doc, sents)
        # one section per run of sentences with the same heading
        runs: List[Tuple[int, int]] = []  # [start, end) sentence indices
        for i, heading in enumerate(headings):
            if runs and headings[runs[-1][0]] == heading:
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
        run_categories = self.tag_headings([headings[start] for start, _ in runs])
        categories: List[Optional[str]] = [None] * len(sents)
        for (start, end), category in zip(runs, run_categories):
            categories[start:end] = [category] * (end - start)
        clear_field(doc, SECTION)
        set_span_values(doc, SECTION, sents, categories)
        doc.spans[self.spans_key] = self._span_group(doc, sents, categories, headings)
        return doc

    def _span_group(self, doc: Doc, sents: List[Span], categories: List[Optional[str]],
                    headings: List[Optional[str]]) -> SpanGroup:
        spans: List[Span] = []
        span_headings: List[List[str]] = []
        previous = None
        for sent, category, heading in zip(sents, categories, headings):
            if category is None:
                previous = None
                continue
            if previous == category:
                spans[-1] = Span(doc, spans[-1].start, sent.end, label=category)
                if heading not in span_headings[-1]:
                    span_headings[-1].append(heading)
            else:
                spans.append(Span(doc, sent.start, sent.end, label=category))
                span_headings.append([heading])
            previous = category
        group = SpanGroup(doc, name=self.spans_key, spans=spans)
        group.attrs["headings"] = span_headings
        return group

    # -------------------------------------------------------------- training
    def initialize(
        self,
        get_examples: Optional[Callable[[], Iterable[Example]]] = None,
        *,
        nlp: Optional[Language] = None,
        headings_path: Optional[Union[str, Path]] = None,
    ) -> None:
        """Retrain the heading classifier from a FeRoSA-style TSV
        (``heading<TAB>facet``, see ``readers.ferosa``) when ``headings_path``
        is given; otherwise keep the current (by default the packaged) one."""
        if headings_path is None:
            return
        pairs, _ = read_ferosa_headings(headings_path)
        self.model = train_heading_classifier(pairs, source=Path(headings_path).name)

    # --------------------------------------------------------- serialization
    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        serializers = {
            "cfg": lambda: srsly.json_dumps(self.cfg),
            "rules": lambda: srsly.json_dumps(self.rules.to_list()),
            "model": lambda: srsly.json_dumps(self.model.to_dict()),
        }
        return util.to_bytes(serializers, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()) -> "SectionTagger":
        deserializers = {
            "cfg": lambda b: self.cfg.update(srsly.json_loads(b)),
            "rules": lambda b: setattr(self, "rules", HeadingRules(srsly.json_loads(b))),
            "model": lambda b: setattr(self, "model", HeadingClassifier.from_dict(srsly.json_loads(b))),
        }
        util.from_bytes(bytes_data, deserializers, exclude)
        return self

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        path = util.ensure_path(path)
        serializers = {
            "cfg": lambda p: srsly.write_json(p, self.cfg),
            "rules.json": lambda p: srsly.write_json(p, {"rules": self.rules.to_list()}),
            "model.json": lambda p: self.model.to_disk(p),
        }
        util.to_disk(path, serializers, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = SimpleFrozenList()) -> "SectionTagger":
        path = util.ensure_path(path)
        deserializers = {
            "cfg": lambda p: self.cfg.update(srsly.read_json(p)),
            "rules.json": lambda p: setattr(self, "rules", HeadingRules.from_file(p)),
            "model.json": lambda p: setattr(self, "model", HeadingClassifier.from_disk(p)),
        }
        util.from_disk(path, deserializers, exclude)
        return self


def _parent_category(number: Tuple[str, ...], by_number: Dict[Tuple[str, ...], str]) -> Optional[str]:
    """The category of the nearest numbered ancestor seen so far ("4.2" for
    "4.2.1", else "4"), None for a top-level or unnumbered heading."""
    for k in range(len(number) - 1, 0, -1):
        if number[:k] in by_number:
            return by_number[number[:k]]
    return None


def sentence_headings(doc: Doc, sents: Sequence[Span]) -> List[Optional[str]]:
    """The raw heading of each sentence: the ``heading`` field covering its
    first token, else the ``section`` field (raw heading from older readers,
    or a category), else "title" for the sentence that is the paper title."""
    by_token: Dict[str, List[Optional[str]]] = {}
    for field in (HEADING, SECTION):
        values: List[Optional[str]] = [None] * len(doc)
        for start, end, value in labelled_spans(doc, field=field):
            if isinstance(value, str) and value.strip():
                values[start:end] = [value] * (end - start)
        by_token[field] = values
    title = get_doc_value(doc, TITLE)
    title = " ".join(title.split()) if isinstance(title, str) and title.strip() else None
    out: List[Optional[str]] = []
    for sent in sents:
        heading = by_token[HEADING][sent.start] or by_token[SECTION][sent.start]
        if heading is None and title is not None and " ".join(sent.text.split()) == title:
            heading = "title"
        out.append(heading)
    return out
