"""Members of the full-paper mixture (``ml/experts.py``) that are fitted by
the member-fitting step (``pipeline/fitting.py``), not trained by ``spacy
train``'s gradient steps nor by ``initialize``: the interface they share and
the features they read.

A fitted member is a thinc ``Model`` (``attrs["fitted"] = True``; its other
``attrs``: the settings of its config block, as its builder received them)
whose learned part lives in its one shim -- the way thinc holds what is not
thinc (``PyTorchShim``, spacy-transformers' ``HFShim``): thinc serialises it
with the model (``to_bytes``/``from_bytes``, plain data: no pickle), moves it
with the model (``to_device``) and frees it with the model. The shim
implements the one interface, the :class:`Member` protocol (its base:
:class:`MemberShim`):

- ``fit(member, X, texts, context, pick, y, labels)``: learn from the rows
  ``pick`` of ``X`` with gold labels ``y`` (``texts``: every row's text;
  ``context``: :func:`context_matrix`), with the settings in ``member.attrs``;
- ``predict_with_vectors(member, X, texts, context)``: ``(probabilities,
  their labels, vectors)`` on every row of ``X``;
- ``fitted``: False before ``fit`` (or after a fit with fewer than two
  labels): the member is then silent and ``experts`` gives its weight to the
  network; ``vector_width``; ``unfit``.

``FunctionClassifier.fit_members`` (called by the member-fitting step)
calls :func:`fit_members` with every gold sentence of the training corpus
(the reference docs: their sections are the true ones); each member learns
from the docs of its ``learn_from`` block (:class:`DocScope`, recorded as
``docs``: "papers", the full papers, ``segments.is_paper``; "others",
abstracts and plain text; "all", both), each distinct text once. At prediction a member
computes only the rows where it speaks (:func:`speaks`: its kind of doc, less
the ``silent_sections`` of a paper, plus the ``paper_sections`` for a member
of the other docs, both given by the mixture, ``experts.speaking_sections``);
the other rows get a uniform row that ``experts`` weighs 0. Members:
``tfidf_member.py`` (scikit-learn), ``finetuned.py`` (torch).
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple, runtime_checkable

import numpy
from spacy.tokens import Doc
from thinc.api import Model
from thinc.shims import Shim
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from ..section_headings import SENTENCE_SECTIONS, UNKNOWN
from .devices import to_host
from .segments import SentenceBatch, paper_rows, sections_of, sentence_headings

FITTED = "fitted"
SCOPES = ("papers", "others", "all")
N_POSITION_BINS = 10
MAX_INDEX = 5
N_CONTEXT = len(SENTENCE_SECTIONS) + 2 * N_POSITION_BINS + MAX_INDEX + 1
_SECTION_INDEX = {name: i for i, name in enumerate(SENTENCE_SECTIONS)}


# ---------------------------------------------------------------- the interface

@runtime_checkable
class Member(Protocol):
    """The one interface of a member's learned part, what the pipe calls
    (through :func:`fit_members` and the member's forward pass), as spaCy
    types a span categorizer's ``Suggester``. Each member's shim (a thinc
    ``Shim``: serialised, moved and freed with the model) implements it;
    :class:`MemberShim` is the base with the shared parts."""

    @property
    def fitted(self) -> bool:
        """Whether it has learned (a member not fitted is silent)."""
        ...

    @property
    def vector_width(self) -> int:
        """Width of the vectors it gives after its probabilities (0: none)."""
        ...

    def fit(self, member: Model, X, texts: Sequence[str], context: numpy.ndarray, pick: Sequence[int],
            y: Sequence[str], labels: Sequence[str]) -> None:
        """Learn from the rows ``pick`` of ``X`` with gold labels ``y``, with
        the settings the ``member`` recorded in its ``attrs``."""
        ...

    def predict_with_vectors(self, member: Model, X, texts: Sequence[str], context: numpy.ndarray
                             ) -> Tuple[numpy.ndarray, List[str], numpy.ndarray]:
        """Probabilities, their labels and every row's vector, one pass."""
        ...

    def unfit(self) -> None:
        """Forget what was learned."""
        ...


@dataclass(frozen=True)
class DocScope:
    """The docs a member learns from, a registered block
    (``spacy_rhetoric.papers.v1``: the full papers, ``segments.is_paper``;
    ``spacy_rhetoric.other_docs.v1``: abstracts and plain text;
    ``spacy_rhetoric.all_docs.v1``: both); ``name`` is what the member
    records (``attrs["docs"]``)."""

    name: str

    def __post_init__(self):
        if self.name not in SCOPES:
            raise RhetoricError(f"Unknown docs {self.name!r} for a fitted member: use one of {SCOPES}")

    @property
    def papers(self) -> bool:
        """Whether the member learns from (and speaks on) full papers."""
        return self.name in ("papers", "all")

    @property
    def others(self) -> bool:
        """Whether the member learns from (and speaks on) abstracts and plain text."""
        return self.name in ("others", "all")


PAPERS, OTHER_DOCS, ALL_DOCS = DocScope("papers"), DocScope("others"), DocScope("all")


class MemberShim(Shim):
    """The learned part of a fitted member (module docstring), a
    :class:`Member`. ``_model``: None until fitted."""

    def __init__(self, model: Any = None, config: Optional[Dict[str, Any]] = None):
        super().__init__(model, config=config)

    @property
    def fitted(self) -> bool:
        return self._model is not None

    def fit(self, member: Model, X, texts: Sequence[str], context: numpy.ndarray, pick: Sequence[int],
            y: Sequence[str], labels: Sequence[str]) -> None:
        raise NotImplementedError

    def predict(self, member: Model, X, texts: Sequence[str], context: numpy.ndarray
                ) -> Tuple[numpy.ndarray, List[str]]:
        raise NotImplementedError

    @property
    def vector_width(self) -> int:
        """Width of the sentence vectors the member gives besides its
        probabilities (0: none; ``finetuned.py``'s vector head)."""
        return 0

    def predict_with_vectors(self, member: Model, X, texts: Sequence[str], context: numpy.ndarray
                             ) -> Tuple[numpy.ndarray, List[str], numpy.ndarray]:
        """``predict``'s probabilities and labels, and every row's vector
        (``[n, vector_width]``), from one pass."""
        probs, labels = self.predict(member, X, texts, context)
        return probs, labels, numpy.zeros((len(texts), 0), dtype="float32")

    def unfit(self) -> None:
        self._model = None

    def finish_update(self, optimizer) -> None:
        """Nothing: a fitted member takes no gradient steps."""

    def to_device(self, device_type: str, device_id: int) -> None:
        """Nothing by default (scikit-learn runs on the CPU)."""


def fitted_member(name: str, shim: MemberShim, attrs: Dict[str, Any], docs: Any = "papers",
                  use_sections: bool = True) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """The thinc model of a fitted member: ``shim`` holds what it learns,
    ``attrs`` its settings (module docstring)."""
    docs = DocScope(docs.name if isinstance(docs, DocScope) else docs).name
    if not isinstance(shim, Member) or not isinstance(shim, Shim):
        raise RhetoricError(f"a fitted member's learned part is a thinc Shim with the Member interface, got {shim!r}")
    return Model(name if DocScope(docs).papers else f"{name}_{docs}", _member_forward, init=_member_init,
                 dims={"nO": None}, shims=[shim],
                 attrs={FITTED: True, "docs": docs, "use_sections": bool(use_sections), **attrs})


def is_fitted_member(model: Model) -> bool:
    return bool(model.attrs.get(FITTED))


def is_fitted(member: Model) -> bool:
    """Whether a fitted member has learned (it speaks only then)."""
    return member.shims[0].fitted


def fitted_members(model: Model) -> List[Model]:
    """The fitted members anywhere in ``model``."""
    return [node for node in model.walk() if is_fitted_member(node)]


def speaks(model: Model, X: Tuple[List[Doc], Ragged], silent_sections: Sequence[str] = (),
           paper_sections: Sequence[str] = ()) -> numpy.ndarray:
    """1.0 on the rows of ``X`` of the docs a fitted member learns from
    (its ``docs``), less the rows of a paper's ``silent_sections`` (a member
    of the papers or of all docs) or plus those of its ``paper_sections`` (a
    member of the other docs); the mixture passes the sections its weights
    give (``experts.speaking_sections``), module docstring."""
    scope = DocScope(model.attrs.get("docs", "papers"))
    on_papers = paper_rows(X)
    out = numpy.zeros_like(on_papers)
    if scope.others:
        out += 1.0 - on_papers
    if scope.papers:
        out += paper_rows(X, silent_sections)
    elif paper_sections:  # + the rows of papers in ``paper_sections`` (e.g. a paper's abstract)
        out += on_papers - paper_rows(X, paper_sections)
    return out


def _member_init(model: Model, X=None, Y=None) -> None:
    """Nothing to allocate: the member is fitted by :func:`fit_members`."""


def member_vector_width(model: Model) -> int:
    """Width of the vectors a fitted member gives after its probabilities
    (0: none, or not fitted)."""
    shim = model.shims[0]
    return shim.vector_width if shim.fitted else 0


def _member_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool):
    """:func:`predict_member` on every row of the docs the member learns from."""
    return predict_member(model, X), lambda dY: []


def predict_member(model: Model, X: Tuple[List[Doc], Ragged], silent_sections: Sequence[str] = (),
                   paper_sections: Sequence[str] = ()):
    """Per row the member's probabilities where it speaks (:func:`speaks`
    with these sections; else uniform) and, with a vector width
    (:func:`member_vector_width`), every row's vector after them:
    ``[n, n_labels + width]``, one pass, an array of the model's ops."""
    shim = model.shims[0]
    n_rows = int(to_host(X[1].lengths).sum())
    labels = list(shim.cfg.get("labels", [])) if shim.fitted else []
    n_out = len(labels) or (model.get_dim("nO") if model.has_dim("nO") else 1)
    width = member_vector_width(model)
    out = numpy.full((n_rows, n_out), 1.0 / n_out, dtype="float32")
    vectors = numpy.zeros((n_rows, width), dtype="float32")
    speak = (speaks(model, X, silent_sections, paper_sections) > 0 if shim.fitted and n_rows
             else numpy.zeros((n_rows,), dtype=bool))
    run = numpy.ones((n_rows,), dtype=bool) if width else speak  # vectors: every row
    if run.any():
        sub, rows = subset(X, run)
        probs, classes, sub_vectors = shim.predict_with_vectors(model, sub, sentence_texts(sub),
                                                                context_matrix(sub, model.attrs["use_sections"]))
        columns = [labels.index(c) for c in classes]
        start = 0
        for row, n, kept in rows:
            block = numpy.zeros((n, n_out), dtype="float32")
            block[:, columns] = probs[start : start + n]
            said = [i for i in kept if speak[row + i]]
            out[[row + i for i in said]] = block[said]
            if width:
                vectors[row : row + n] = sub_vectors[start : start + n]
            start += n
    if width:
        out = numpy.concatenate([out, vectors], axis=1)
    return model.ops.asarray2f(out)


def fit_members(members: Sequence[Model], X: Tuple[List[Doc], Ragged], gold: Sequence[Optional[str]],
                labels: Sequence[str]) -> Dict[str, Dict[str, int]]:
    """Fit each fitted member on the sentence rows of ``X`` (reference docs
    and their gold sentences) of the docs it learns from (:func:`speaks`),
    each distinct text once; ``gold``: per row its gold label (None:
    unlabelled, context only; a label not in ``labels`` is left out). A
    member with fewer than two labels to learn is left unfitted (silent).
    Returns counts per member name."""
    lengths = to_host(X[1].lengths).tolist()
    papers = paper_rows(X) > 0
    known = set(labels)
    out = {}
    for member in members:
        shim = member.shims[0]
        shim.unfit()
        scope = DocScope(member.attrs.get("docs", "papers"))
        keep, seen, row, n_docs = numpy.zeros(len(gold), dtype=bool), set(), 0, 0
        for doc, n in zip(X[0], lengths):
            if n and (scope.papers if papers[row] else scope.others) and doc.text not in seen:
                seen.add(doc.text)
                keep[row : row + n] = True
                n_docs += 1
            row += n
        sub, _ = subset(X, keep)
        sub_gold = [g for g, k in zip(gold, keep) if k]
        pick = [i for i, g in enumerate(sub_gold) if g in known]
        y = [sub_gold[i] for i in pick]
        out[member.name] = {"docs": n_docs, "sentences": len(sub_gold), "labelled": len(pick)}
        if len(set(y)) >= 2:
            shim.fit(member, sub, sentence_texts(sub), context_matrix(sub, member.attrs["use_sections"]), pick, y,
                     labels)
            shim.cfg["labels"] = list(labels)
    return out


# ---------------------------------------------------------------- features

def row_spans(X: Tuple[List[Doc], Ragged]) -> List[Any]:
    """The sentence ``Span`` of every row of ``X = (docs, indices)``."""
    docs, indices = X
    offsets = to_host(indices.dataXd).tolist()
    out, row = [], 0
    for doc, n in zip(docs, to_host(indices.lengths).tolist()):
        out.extend(doc[int(offsets[row + i][0]) : int(offsets[row + i][1])] for i in range(n))
        row += n
    return out


def sentence_texts(X: Tuple[List[Doc], Ragged]) -> List[str]:
    """The text of every sentence row of ``X = (docs, indices)``."""
    return [span.text for span in row_spans(X)]


def row_values(X: Tuple[List[Doc], Ragged], field: str) -> List[Any]:
    """Every sentence row's stored ``field`` value (``extensions``; None
    where it has none)."""
    from ..extensions import get_span_value

    return [get_span_value(span, field) for span in row_spans(X)]


def row_doc_values(X: Tuple[List[Doc], Ragged], field: str) -> List[Any]:
    """Every sentence row's doc-level ``field`` value (``extensions``; None
    where its doc has none)."""
    from ..extensions import get_doc_value

    lengths = to_host(X[1].lengths).tolist()
    return [value for doc, n in zip(X[0], lengths) for value in [get_doc_value(doc, field)] * int(n)]


def neighbour_rows(lengths: Sequence[int]) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Row index of the previous and of the next sentence of the same doc
    (-1: none), for docs of ``lengths`` sentences in a row."""
    prev, nxt, row = [], [], 0
    for n in lengths:
        prev.extend([-1] + list(range(row, row + n - 1)) if n else [])
        nxt.extend(list(range(row + 1, row + n)) + [-1] if n else [])
        row += n
    return numpy.asarray(prev, dtype="int64"), numpy.asarray(nxt, dtype="int64")


def heading_runs(X: Tuple[List[Doc], Ragged]) -> List[int]:
    """Lengths of the runs of consecutive sentences of a doc under the same
    heading (``sent._.rhetoric_heading``; a doc without headings is one
    run). Runs by heading, not by section category: topical headings that
    are all section "unknown" are runs of their own."""
    headings = sentence_headings(X)
    out, row = [], 0
    for n in to_host(X[1].lengths).tolist():
        for i in range(n):
            if i == 0 or headings[row + i] != headings[row + i - 1]:
                out.append(0)
            out[-1] += 1
        row += n
    return out


def context_matrix(X: Tuple[List[Doc], Ragged], sections: bool = True) -> numpy.ndarray:
    """``[n, N_CONTEXT]``: each sentence's section category (one-hot over
    ``SENTENCE_SECTIONS``), its relative position in its run of sentences
    under one heading (``heading_runs``) and in its doc
    (``N_POSITION_BINS`` buckets each) and its index in the run
    (0 .. ``MAX_INDEX``, the last bucket for the rest). ``sections=False``:
    the section columns stay 0 (a member of abstracts and plain text, where
    the section is "abstract" in training and "unknown" in plain text)."""
    names = sections_of(X)
    out = numpy.zeros((len(names), N_CONTEXT), dtype="float32")
    for i, name in enumerate(names if sections else []):
        out[i, _SECTION_INDEX.get(name, _SECTION_INDEX[UNKNOWN])] = 1.0
    base = len(SENTENCE_SECTIONS)
    row = 0
    for n in heading_runs(X):
        for i in range(n):
            out[row + i, base + min(N_POSITION_BINS - 1, int(i / n * N_POSITION_BINS))] = 1.0
            out[row + i, base + 2 * N_POSITION_BINS + min(i, MAX_INDEX)] = 1.0
        row += n
    row = 0
    for n in to_host(X[1].lengths).tolist():
        for i in range(n):
            out[row + i, base + N_POSITION_BINS + min(N_POSITION_BINS - 1, int(i / n * N_POSITION_BINS))] = 1.0
        row += n
    return out


def subset(X: Tuple[List[Doc], Ragged], keep: numpy.ndarray):
    """The docs of ``X`` with a row where ``keep`` is set, whole (their
    neighbours and positions need every sentence), as a new batch, and per
    such doc (first row, sentences, kept sentences). The section names the
    batch has read already (``segments.SentenceBatch``) go with it, so the
    features do not read them from the docs again."""
    from thinc.api import NumpyOps

    from .pooling import make_indices

    docs, indices = X
    offsets = to_host(indices.dataXd).tolist()
    out_docs, out_offsets, rows, row = [], [], [], 0
    for doc, n in zip(docs, to_host(indices.lengths).tolist()):
        kept = [i for i in range(n) if keep[row + i]]
        if kept:
            out_docs.append(doc)
            out_offsets.append([tuple(offsets[row + i]) for i in range(n)])
            rows.append((row, n, kept))
        row += n
    read = getattr(X, "sections", None) or {}
    sections = {flag: [names[r + i] for r, n, _ in rows for i in range(n)] for flag, names in read.items()}
    return SentenceBatch(out_docs, make_indices(NumpyOps(), out_offsets), sections), rows
