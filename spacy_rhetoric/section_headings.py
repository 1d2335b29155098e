"""Section headings -> section categories: parsing, keyword rules, the
learned heading classifier and its training (used by
``rhetoric_section_tagger``, ``scripts/build_section_model.py`` and
``benchmarks/fullpaper/bench_section_tagger.py``).

* :func:`parse_heading` splits a raw heading into its number (``"4.2"`` ->
  ``("4", "2")``; arabic, roman ``"IV."`` and letter ``"A.1"`` numbering) and
  its normalised text (lower case, ``&`` -> ``and``, punctuation -> space).
* :class:`HeadingRules`: keyword rules kept as data (``assets/section_rules.json``,
  extendable by a user file): regular expressions searched in the normalised
  text; the match that starts first wins (then the longer one, then the
  earlier rule). A rule marked ``back_matter`` (references,
  acknowledgements, appendix...) also makes every later heading of the paper
  ``other``. A pipeline's rules are data from its folder, so they run on the
  ``regex`` engine (a dependency of transformers) with a time limit per
  search, :data:`RULE_TIMEOUT`: a pattern that backtracks without end
  (``^(a|aa)+$``) is a RhetoricError naming the rule, never a stalled run.
* :class:`HeadingClassifier`: scikit-learn char n-gram TF-IDF +
  LogisticRegression, stored as JSON (vocabulary, idf, coefficients) and
  rebuilt on load, never pickled. The packaged one
  (``assets/section_model.json``) is built from the FeRoSA headings by
  ``scripts/build_section_model.py``.
* :func:`sentence_sections`: the section of each sentence of a doc, from the
  extension values (``sent._.rhetoric_section`` / ``rhetoric_heading``), with back
  matter (``BACK_MATTER``) by the ``back_matter`` rules and, optionally, by
  :func:`is_acknowledgement` (used by the section-aware classifier,
  ``ml/sections.py``, and the weak labels of ``readers/section_labels.py``).
"""
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy
import regex as safe_re
import srsly
from spacy.tokens import Doc

from .errors import RhetoricError
from .extensions import HEADING, SECTION, labelled_spans
from .linear_models import logreg_from_dict, logreg_to_dict, new_tfidf, tfidf_from_dict, tfidf_to_dict
from .resources import asset_path

# Categories, in the order of a paper. COSAEMB's five plus title, abstract
# and other (back matter, junk, and headings the model is unsure about).
TITLE = "title"
ABSTRACT = "abstract"
INTRODUCTION = "introduction"
RELATED_WORK = "related work"
METHOD = "method"
RESULTS = "results"
CONCLUSION = "conclusion"
OTHER = "other"
CATEGORIES = (TITLE, ABSTRACT, INTRODUCTION, RELATED_WORK, METHOD, RESULTS, CONCLUSION, OTHER)
# What rhetoric_section_tagger says of a heading nothing decides (a topical
# heading), and what a section-aware classifier sees for a sentence without a
# section (plain text, PMC-Sents-FULL).
UNKNOWN = "unknown"
# What it says of such a heading between the paper's introduction (or another
# body section: related work, method, results) and its conclusion or back
# matter: the body of the paper, where its own work is described
# ("2 Structure of the Literature Graph", "3 Theory", "Synthesis of ...").
BODY = "body"
INTRO_SECTIONS = (INTRODUCTION, RELATED_WORK, METHOD, RESULTS)

RULES_FILE = "section_rules.json"
MODEL_FILE = "section_model.json"


# --------------------------------------------------------------------------
# Parsing


@dataclass(frozen=True)
class Heading:
    raw: str
    number: Tuple[str, ...]  # () when unnumbered; ("4", "2") for "4.2 ..."
    text: str  # normalised text without the number

    @property
    def depth(self) -> int:
        """1 for "4 ..." / unnumbered, 2 for "4.2 ...", ..."""
        return max(1, len(self.number))

    @property
    def model_text(self) -> str:
        """What the rules and the classifier read: the text, or for a heading
        that is only a number (OCR junk), the whole normalised heading."""
        return self.text or normalize_heading(self.raw)


_NUMBER = re.compile(
    r"^\s*(?:"
    r"(?P<arabic>\d{1,3}(?:\.\d{1,3})*)(?:\.\s*|\)\s*|\s+|$)"  # 4 / 4.2 / 4.2. / 4)
    r"|(?P<letter>[A-Z](?:\.\d{1,3})+)(?:\.\s*|\s+|$)"  # A.1 / A.1.2
    r"|(?P<letter1>[A-Z])[.)]\s+"  # A. / A)  (a bare "A " is an article)
    r"|(?P<roman>[IVX]{1,5})(?:[.)]\s*|\s+(?=[A-Z]))"  # IV. / IV Results
    r")"
)
_PUNCT = re.compile(r"[^\w\s-]+")
_SPACE = re.compile(r"\s+")


def normalize_heading(text: str) -> str:
    """Lower case, ``&`` -> ``and``, punctuation (but hyphens) -> space,
    whitespace collapsed, stray hyphens at the ends removed."""
    text = text.lower().replace("&", " and ")
    text = _PUNCT.sub(" ", text)
    return _SPACE.sub(" ", text).strip(" -")


def parse_heading(raw: str) -> Heading:
    """Split ``raw`` into number and normalised text: ``"4.2 Results on WMT"``
    -> ``Heading(number=("4", "2"), text="results on wmt")``."""
    raw = str(raw)
    number: Tuple[str, ...] = ()
    rest = raw
    m = _NUMBER.match(raw)
    if m:
        value = m.group("arabic") or m.group("letter") or m.group("letter1") or m.group("roman")
        number = tuple(value.split("."))
        rest = raw[m.end():]
    return Heading(raw=raw, number=number, text=normalize_heading(rest))


# --------------------------------------------------------------------------
# Keyword rules


# Seconds one rule may search one heading (microseconds for any sensible pattern).
RULE_TIMEOUT = 0.5


@dataclass(frozen=True)
class Rule:
    category: str
    pattern: str
    back_matter: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", safe_re.compile(self.pattern))

    def search(self, text: str, timeout: float = RULE_TIMEOUT):
        """The first match in ``text`` (None if none); a RhetoricError naming
        the rule when the search runs past ``timeout`` seconds."""
        try:
            return self.regex.search(text, timeout=timeout)
        except TimeoutError:
            raise RhetoricError(
                f"section rule {self.pattern!r} (category {self.category!r}) ran past {timeout:g} s on a "
                f"heading of {len(text)} characters ({text[:40]!r}): the pattern backtracks without end "
                "(a repetition inside a repetition, as in (a+)+ or (a|aa)+); fix or remove it in the rules file"
            ) from None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"category": self.category, "pattern": self.pattern}
        if self.back_matter:
            out["back_matter"] = True
        return out


@dataclass(frozen=True)
class RuleMatch:
    rule: Rule
    start: int  # character offsets of the match in the normalised text
    end: int

    @property
    def category(self) -> str:
        return self.rule.category

    @property
    def back_matter(self) -> bool:
        return self.rule.back_matter


class HeadingRules:
    """Ordered keyword rules over normalised heading text."""

    def __init__(self, rules: Iterable[Union[Rule, Dict[str, Any]]] = ()) -> None:
        self.rules: List[Rule] = []
        if isinstance(rules, (str, bytes, dict)) or not isinstance(rules, Iterable):
            raise RhetoricError(f"section rules must be a list of objects, got {type(rules).__name__}")
        for i, rule in enumerate(rules):
            if not isinstance(rule, (dict, Rule)):
                raise RhetoricError(f"section rule {i} must be an object with 'category' and 'pattern', "
                                    f"got {type(rule).__name__}")
            if isinstance(rule, dict):
                unknown = set(rule) - {"category", "pattern", "back_matter", "comment"}
                if unknown or "category" not in rule or "pattern" not in rule:
                    raise RhetoricError(
                        f"section rule {i} must have 'category' and 'pattern' (optional 'back_matter', "
                        f"'comment'), got {sorted(rule)}"
                    )
                try:
                    rule = Rule(str(rule["category"]), str(rule["pattern"]), bool(rule.get("back_matter", False)))
                except (re.error, safe_re.error) as exc:
                    raise RhetoricError(f"section rule {i}: bad regular expression {rule['pattern']!r}: {exc}") from None
            self.rules.append(rule)

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "HeadingRules":
        """Rules from a JSON file: ``{"rules": [{"category", "pattern",
        "back_matter"?}, ...]}`` or a bare list of such objects."""
        data = srsly.read_json(path)
        if isinstance(data, dict):
            data = data.get("rules", [])
        return cls(data)

    @classmethod
    def packaged(cls) -> "HeadingRules":
        return cls.from_file(asset_path(RULES_FILE))

    def __add__(self, other: "HeadingRules") -> "HeadingRules":
        return HeadingRules(self.rules + other.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def to_list(self) -> List[Dict[str, Any]]:
        return [r.to_dict() for r in self.rules]

    def match(self, text: str) -> Optional[RuleMatch]:
        """The rule whose match starts first in ``text`` (normalised), then
        the longest match, then the earliest rule; None when none matches."""
        best: Optional[Tuple[int, int, int]] = None
        found = None
        for i, rule in enumerate(self.rules):
            m = rule.search(text)
            if m is None:
                continue
            key = (m.start(), -(m.end() - m.start()), i)
            if best is None or key < best:
                best, found = key, RuleMatch(rule, m.start(), m.end())
        return found


# --------------------------------------------------------------------------
# Learned classifier

DEFAULT_VECTORIZER = {"analyzer": "char_wb", "ngram_range": [1, 4], "min_df": 3, "max_features": 3000,
                      "sublinear_tf": True}
DEFAULT_CLASSIFIER = {"C": 10.0, "max_iter": 2000}
_DECIMALS = 5  # stored precision of idf and coefficients


class HeadingClassifier:
    """Char n-gram TF-IDF + LogisticRegression over normalised heading text
    (scikit-learn), persisted as JSON."""

    def __init__(self, vectorizer, classifier, info: Optional[Dict[str, Any]] = None) -> None:
        self.vectorizer = vectorizer
        self.classifier = classifier
        self.info = dict(info or {})

    @property
    def classes(self) -> List[str]:
        return [str(c) for c in self.classifier.classes_]

    @classmethod
    def fit(cls, texts: Sequence[str], labels: Sequence[str], *,
            vectorizer: Optional[Dict[str, Any]] = None, classifier: Optional[Dict[str, Any]] = None,
            info: Optional[Dict[str, Any]] = None) -> "HeadingClassifier":
        from sklearn.linear_model import LogisticRegression

        vec_params = {**DEFAULT_VECTORIZER, **(vectorizer or {})}
        clf_params = {**DEFAULT_CLASSIFIER, **(classifier or {})}
        if len(set(labels)) < 2:
            raise RhetoricError(f"HeadingClassifier needs at least two categories, got {sorted(set(labels))}")
        vec = new_tfidf(vec_params)
        X = vec.fit_transform(list(texts))
        clf = LogisticRegression(**clf_params).fit(X, list(labels))
        # Keep only what is stored, rounded, so a saved model predicts exactly
        # like the trained one.
        data = {"vectorizer": tfidf_to_dict(vec, vec_params, _DECIMALS),
                "classifier": logreg_to_dict(clf, clf_params, _DECIMALS),
                "info": {**(info or {}), "n_train": len(texts)}}
        return cls.from_dict(data)

    def predict_proba(self, texts: Sequence[str]) -> numpy.ndarray:
        """(n, len(classes)) probabilities."""
        if not len(texts):
            return numpy.zeros((0, len(self.classes)), dtype="float64")
        return self.classifier.predict_proba(self.vectorizer.transform(list(texts)))

    def predict(self, texts: Sequence[str]) -> List[Tuple[str, float]]:
        """(category, probability) of the most probable category per text."""
        probs = self.predict_proba(texts)
        classes = self.classes
        return [(classes[int(i)], float(row[int(i)])) for row, i in zip(probs, probs.argmax(axis=1))]

    def to_dict(self) -> Dict[str, Any]:
        return {
            "vectorizer": tfidf_to_dict(self.vectorizer, self.info.get("vectorizer_params", {})),
            "classifier": logreg_to_dict(self.classifier, self.info.get("classifier_params", {})),
            "info": {k: v for k, v in self.info.items() if k not in ("vectorizer_params", "classifier_params")},
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "HeadingClassifier":
        vec = tfidf_from_dict(data["vectorizer"])
        clf = logreg_from_dict(data["classifier"], n_features=len(vec.vocabulary))
        info = {**data.get("info", {}), "vectorizer_params": dict(data["vectorizer"]["params"]),
                "classifier_params": dict(data["classifier"]["params"])}
        return cls(vec, clf, info)

    def to_disk(self, path: Union[str, Path]) -> None:
        srsly.write_json(path, self.to_dict(), indent=0)

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "HeadingClassifier":
        return cls.from_dict(srsly.read_json(path))

    @classmethod
    def packaged(cls) -> "HeadingClassifier":
        return cls.from_disk(asset_path(MODEL_FILE))


def train_heading_classifier(pairs: Sequence[Tuple[str, str]], *, source: str = "",
                             vectorizer: Optional[Dict[str, Any]] = None,
                             classifier: Optional[Dict[str, Any]] = None) -> HeadingClassifier:
    """Fit a HeadingClassifier on ``(raw heading, category)`` pairs (the
    text it reads is ``parse_heading(raw).model_text``)."""
    texts = [parse_heading(h).model_text for h, _ in pairs]
    labels = [c for _, c in pairs]
    counts: Dict[str, int] = {}
    for c in labels:
        counts[c] = counts.get(c, 0) + 1
    return HeadingClassifier.fit(texts, labels, vectorizer=vectorizer, classifier=classifier,
                                 info={"source": source, "categories": dict(sorted(counts.items()))})


def split_headings(pairs: Sequence[Tuple[str, str]], *, test_fraction: float = 0.2,
                   seed: int = 0) -> Tuple[List[Tuple[str, str]], List[Tuple[str, str]]]:
    """Train/test split by heading string: all rows whose normalised heading
    (``normalize_heading``) is one of the held-out strings go to test, so no
    string is on both sides. The held-out strings are a seeded random
    ``test_fraction`` of the distinct strings."""
    keys = sorted({normalize_heading(h) for h, _ in pairs})
    rng = numpy.random.default_rng(seed)
    order = rng.permutation(len(keys))
    held = {keys[i] for i in order[: int(round(len(keys) * test_fraction))]}
    train = [p for p in pairs if normalize_heading(p[0]) not in held]
    test = [p for p in pairs if normalize_heading(p[0]) in held]
    return train, test


@lru_cache(maxsize=1)
def packaged_rules() -> HeadingRules:
    """The packaged keyword rules (``assets/section_rules.json``), loaded once."""
    return HeadingRules.packaged()


@lru_cache(maxsize=4096)
def _rule_match(heading: str) -> Optional[RuleMatch]:
    if not heading or not heading.strip():
        return None
    return packaged_rules().match(parse_heading(heading).model_text)


def is_back_matter_heading(heading: str) -> bool:
    """True for a heading a packaged ``back_matter`` rule matches
    ("Acknowledgments", "References", "Appendix A", "5 Funding")."""
    match = _rule_match(heading)
    return bool(match is not None and match.back_matter)


def rule_category(heading: Optional[str]) -> Optional[str]:
    """The category the packaged keyword rules give a raw heading (number
    and punctuation dropped: "1 Introduction." -> introduction, "Prior and
    Related Work." -> related work), None when no rule matches."""
    match = _rule_match(heading or "")
    return match.category if match is not None else None


# -- the section of each sentence of a doc ------------------------------------------

BACK_MATTER = "back matter"
BODY_SECTIONS = (INTRODUCTION, RELATED_WORK, METHOD, RESULTS, CONCLUSION)
# Every name sentence_sections gives; the one-hot order of ml/sections.py (never reorder: trained
# models depend on it).
SENTENCE_SECTIONS = (ABSTRACT, INTRODUCTION, RELATED_WORK, METHOD, RESULTS, CONCLUSION, TITLE, OTHER,
                     BACK_MATTER, UNKNOWN)
_SENTENCE_SECTION_SET = frozenset(SENTENCE_SECTIONS)


def body_between(categories: Sequence[Optional[str]]) -> List[Optional[str]]:
    """``categories`` of a paper's headings in reading order (None: no
    heading) with every ``unknown`` between the first introduction-type
    heading (``INTRO_SECTIONS``) and the first conclusion or back-matter
    (``other``) heading after it called ``body``; the rest as they are (no
    introduction, or a topical heading after the conclusion: ``unknown``)."""
    out = list(categories)
    first = next((i for i, c in enumerate(out) if c in INTRO_SECTIONS), None)
    if first is None:
        return out
    end = next((i for i in range(first + 1, len(out)) if out[i] in (CONCLUSION, OTHER)), len(out))
    for i in range(first + 1, end):
        if out[i] == UNKNOWN:
            out[i] = BODY
    return out


def feature_section(section: Optional[str]) -> str:
    """The section a classifier reads for the tagger's ``section``: a
    ``SENTENCE_SECTIONS`` name, ``unknown`` for anything else (no section, a
    raw heading, ``body``). The tagger tells the user where a sentence is; as
    a feature of the classifier ``body`` gave nothing its position features
    did not (RESULTS.md [C33]: the same ART and MuLMS-AZ figures, one
    sample-paper sentence fewer in the demo), so the trained models keep the
    sections they were made with."""
    return section if section in _SENTENCE_SECTION_SET else UNKNOWN


def token_values(doc: Doc, field: str) -> List[Optional[str]]:
    """The value of ``field`` covering each token of ``doc`` (None: none)."""
    values: List[Optional[str]] = [None] * len(doc)
    for start, end, value in labelled_spans(doc, field=field):
        if isinstance(value, str) and value.strip():
            values[start:end] = [value] * (end - start)
    return values


ACKNOWLEDGEMENT = re.compile(
    r"^\s*(?:we|the authors?|i)\s+(?:would\s+(?:also\s+)?like\s+to\s+|also\s+|wish\s+to\s+|are\s+grateful|"
    r"gratefully\s+acknowledge|acknowledge|thank)|^\s*this\s+(?:work|research|project)\s+(?:was|is|has\s+been)\s+"
    r"(?:partially\s+|partly\s+)?(?:supported|funded)",
    re.IGNORECASE,
)


def is_acknowledgement(text: str) -> bool:
    """A thank-you or funding sentence ("We would like to thank the
    reviewers...", "This work was supported by...")."""
    m = ACKNOWLEDGEMENT.match(text)
    return bool(m) and bool(re.search(r"\b(?:thank|grateful|acknowledge|supported|funded)", text[: m.end() + 20],
                                      re.IGNORECASE))


def sentence_sections(doc: Doc, starts: Sequence[int], ends: Optional[Sequence[int]] = None) -> List[str]:
    """The section of the sentences starting at token ``starts`` (in doc
    order): a ``SENTENCE_SECTIONS`` name. The section of a sentence is the
    value covering its first token (``unknown`` without one, or for a raw
    heading that is no category); a sentence outside the body and the
    abstract from the first back-matter heading on (``is_back_matter_heading``)
    is ``back matter``. With ``ends`` (``acknowledgements`` of the
    classifier), a thank-you or funding sentence (``is_acknowledgement``)
    outside the abstract is back matter too. Any other section reads as
    ``feature_section`` says (``body``: ``unknown``)."""
    sections = token_values(doc, SECTION)
    headings = token_values(doc, HEADING)
    # back matter from the first back-matter heading on
    first_back = len(doc)
    seen = set()
    for i, heading in enumerate(headings):
        if heading is not None and heading not in seen:
            seen.add(heading)
            if is_back_matter_heading(heading):
                first_back = i
                break
    out = []
    for k, start in enumerate(starts):
        start = int(start)
        section = sections[start] if start < len(doc) else None
        if section not in BODY_SECTIONS and section != ABSTRACT and start >= first_back:
            out.append(BACK_MATTER)
        elif ends is not None and section != ABSTRACT and is_acknowledgement(doc[start:int(ends[k])].text):
            out.append(BACK_MATTER)
        else:
            out.append(feature_section(section))
    return out
