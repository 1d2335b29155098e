"""rhetoric_function_classifier: one rhetorical-function label per sentence.

A softmax over a label set learned in ``initialize``. The predictions are
stored once, as span extension values (see ``spacy_rhetoric.extensions``:
spaCy's own storage in ``doc.user_data``, keyed by character offsets): by
default the coarse fields, ``sent._.rhetoric_label`` and
``sent._.rhetoric_scores``; a second instance trained on fine communicative
functions (e.g. the distant labels of ``spacy-rhetoric label``) writes
``label_field = "fine_label"`` and ``scores_field = "fine_scores"``
(``sent._.rhetoric_fine_label``, ``sent._.rhetoric_fine_scores``), so both
can run in one pipeline. The span group ``doc.spans[spans_key]``
("rhetoric", or "rhetoric_fine" for the fine classifier; the probability of
each span's label in its ``attrs["scores"]``, as spaCy's spancat) is a view
of the same predictions, built in the same ``set_annotations`` call, for
displaCy's span style, ``Scorer.score_spans`` and other span-group tools;
the scorer and training read the extension values. Whitespace-only
sentences get no label. Gold labels are read from ``gold_field`` of the
reference docs (``"label"``, where every reader puts them). At prediction
time the sentences are the predicted doc's ``doc.sents``; in ``update`` they
are the gold sentences of the reference doc, so training does not depend on
a sentencizer (both through ``SentencePipe``). Gold sentences without a
label are left out of the loss.
"""
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
from spacy.language import Language
from spacy.tokens import Doc, Span, SpanGroup
from spacy.training import Example
from spacy.util import registry
from spacy.vocab import Vocab
from thinc.api import Config, Model, NumpyOps
from thinc.types import Floats2d

from ..errors import RhetoricError
from ..evaluation.scorers import sentence_label_scores
from ..extensions import (
    FINE_LABEL,
    GOLD_LABELS,
    LABEL,
    SCORES,
    SPANS_KEY,
    VECTOR,
    install_vector_hooks,
    labelled_spans,
    set_span_values,
)
from ..ml.experts import vector_width
from ..ml.members import fit_members, fitted_members
from ..ml.pooling import example_sentences, make_indices
from .sentence_pipe import SentencePipe, Truth

DEFAULT_CLASSIFIER_MODEL_CONFIG = """
[model]
@architectures = "spacy_rhetoric.ContextSentenceClassifier.v1"
pooling = "mean"
width = 64
maxout_pieces = 3
dropout = 0.1
nO = null

[model.encoder]
@architectures = "spacy_rhetoric.ContextCNN.v1"
width = ${model.width}
depth = 2
window_size = 1
maxout_pieces = 3
dropout = 0.1

[model.tok2vec]
@architectures = "spacy.HashEmbedCNN.v2"
pretrained_vectors = null
width = 96
depth = 2
embed_size = 2000
window_size = 1
maxout_pieces = 3
subword_features = true
"""
DEFAULT_CLASSIFIER_MODEL = Config().from_str(DEFAULT_CLASSIFIER_MODEL_CONFIG)["model"]

SCORE_PREFIX = "rhetoric"


def score_prefix(label_field: str = LABEL) -> str:
    """Prefix of the score keys: ``rhetoric`` for the coarse ``label`` field,
    ``rhetoric_<field>`` otherwise (``rhetoric_fine_label_f_micro``), so two
    classifiers in one pipeline report apart."""
    return SCORE_PREFIX if label_field == LABEL else f"{SCORE_PREFIX}_{label_field}"


def score_function_classifier(
    examples: Iterable[Example], *, label_field: str = LABEL, gold_field: str = LABEL, **kwargs
) -> Dict[str, Any]:
    """Sentence-level scores of predicted ``label_field`` values against the
    gold ``gold_field`` values of the reference docs.

    Each labelled gold sentence is one item. Its prediction is the label of
    the predicted sentence that contains the gold sentence's first token
    (so a different sentence segmentation costs what it really costs); a gold
    sentence with no prediction counts as wrong. The scores are
    ``spacy_rhetoric.evaluation.scorers.sentence_label_scores`` (F1-micro = accuracy,
    macro over the labels in gold or predictions), the same function as
    ``spacy-rhetoric evaluate``. Keys: rhetoric_f_micro, rhetoric_f_macro,
    rhetoric_p_macro, rhetoric_r_macro, rhetoric_f_per_type (prefix from
    ``score_prefix(label_field)``).
    """
    examples = list(examples)  # read twice: labels, then vectors
    golds: List[str] = []
    preds: List[Optional[str]] = []
    for eg in examples:
        gold_spans = labelled_spans(eg.reference, field=gold_field)
        if not gold_spans:
            continue
        pred = eg.predicted
        token_label: List[Optional[str]] = [None] * len(pred)
        for start, end, label in labelled_spans(pred, field=label_field):
            token_label[start:end] = [label] * (end - start)
        same = pred.text == eg.reference.text and len(pred) == len(eg.reference)
        for start, end, label in gold_spans:
            if same:
                first = start
            else:
                aligned = eg.get_aligned_spans_y2x(
                    [eg.reference[start:end]], allow_overlap=True
                )
                first = aligned[0].start if aligned else None
            golds.append(label)
            preds.append(token_label[first] if first is not None and first < len(pred) else None)
    scores = sentence_label_scores(golds, preds)
    prefix = score_prefix(label_field)
    out: Dict[str, Any] = {f"{prefix}_{k}": scores[k] for k in ("f_micro", "f_macro", "p_macro", "r_macro")}
    out[f"{prefix}_f_per_type"] = {
        label: {k: v for k, v in prf.items() if k != "support"} for label, prf in scores["per_label"].items()
    }
    out.update(vector_scores(examples, gold_field, prefix))
    return out


def vector_scores(examples: Iterable[Example], gold_field: str, prefix: str) -> Dict[str, Optional[float]]:
    """With a vector head (the predicted sentences carry
    ``rhetoric_vector``): leave-one-out retrieval of the gold-labelled
    sentences by their gold label, as ``rhetoric_sentence_encoder``'s
    scorer, keys ``<prefix>_vector_p_at_1`` and ``<prefix>_vector_map_at_r``
    (None without vectors)."""
    from ..evaluation.metrics import retrieval_scores
    from .sentence_encoder import collect_vectors

    vectors, labels, _ = collect_vectors(examples, field=gold_field)
    out: Dict[str, Optional[float]] = {f"{prefix}_vector_p_at_1": None, f"{prefix}_vector_map_at_r": None}
    if len(labels) >= 2 and len(set(labels)) >= 2:
        result = retrieval_scores(vectors, labels)
        out.update({f"{prefix}_vector_p_at_1": float(result["p_at_1"]),
                    f"{prefix}_vector_map_at_r": float(result["map_at_r"])})
    return out


def class_weights(counts: Sequence[int], power: float) -> List[float]:
    """Per-label loss weights ``(n / (K * n_k)) ** power`` for label counts
    ``n_k`` (a label never seen weighs 1), scaled so that the mean weight over
    the counted sentences is 1."""
    counts_a = numpy.asarray(counts, dtype="float64")
    n, k = counts_a.sum(), max(1, int((counts_a > 0).sum()))
    if n <= 0:
        return [1.0] * len(counts)
    w = numpy.where(counts_a > 0, (n / (k * numpy.maximum(counts_a, 1))) ** power, 1.0)
    w = w / ((w * counts_a).sum() / n)
    return [float(x) for x in w]


@registry.scorers("spacy_rhetoric.function_classifier_scorer.v1")
def make_function_classifier_scorer() -> Callable:
    return score_function_classifier


def default_spans_key(label_field: str = LABEL) -> str:
    """The span group a classifier writes when ``spans_key`` is not set:
    ``"rhetoric"`` for the coarse ``label`` field, ``"rhetoric_fine"`` for
    ``fine_label``, ``"rhetoric_<label_field>"`` otherwise."""
    if label_field == LABEL:
        return SPANS_KEY
    if label_field == FINE_LABEL:
        return f"{SPANS_KEY}_fine"
    return f"{SPANS_KEY}_{label_field}"


@Language.factory(
    "rhetoric_function_classifier",
    assigns=[
        "doc.spans",
        "span._.rhetoric_label",
        "span._.rhetoric_scores",
        "span._.rhetoric_fine_label",
        "span._.rhetoric_fine_scores",
        "span._.rhetoric_vector",
    ],
    default_config={
        "model": DEFAULT_CLASSIFIER_MODEL,
        "label_field": LABEL,
        "scores_field": SCORES,
        "gold_field": LABEL,
        "spans_key": None,
        "class_weight_power": 0.0,
        "scorer": {"@scorers": "spacy_rhetoric.function_classifier_scorer.v1"},
    },
    default_score_weights={
        f"{SCORE_PREFIX}_f_micro": 0.5,
        f"{SCORE_PREFIX}_f_macro": 0.5,
        f"{SCORE_PREFIX}_p_macro": 0.0,
        f"{SCORE_PREFIX}_r_macro": 0.0,
        f"{SCORE_PREFIX}_f_per_type": None,
        f"{SCORE_PREFIX}_vector_p_at_1": None,
        f"{SCORE_PREFIX}_vector_map_at_r": None,
    },
)
def make_function_classifier(
    nlp: Language,
    name: str,
    model: Model,
    label_field: str,
    scores_field: str,
    gold_field: str,
    spans_key: Optional[str],
    class_weight_power: float,
    scorer: Optional[Callable],
) -> "FunctionClassifier":
    """Create a rhetoric_function_classifier (one label per sentence).

    model (Model[Tuple[List[Doc], Ragged], Floats2d]): a sentence classifier,
        e.g. spacy_rhetoric.ContextSentenceClassifier.v1 (default) or
        spacy_rhetoric.SentenceClassifier.v1.
    label_field (str): store field of the predicted label: "label" (coarse,
        sent._.rhetoric_label) or "fine_label" (sent._.rhetoric_fine_label).
    scores_field (str): store field of the label probabilities: "scores" or
        "fine_scores".
    gold_field (str): field of the reference docs holding the gold labels.
    spans_key (Optional[str]): the span group ``doc.spans[spans_key]`` that
        gets one span per sentence (label = predicted label; the group's
        ``attrs["scores"]``: the probability of each span's label, as spaCy's
        spancat). None: ``default_spans_key(label_field)``, i.e. "rhetoric"
        for the coarse classifier, "rhetoric_fine" for label_field "fine_label".
    class_weight_power (float): 0 (default): every labelled sentence weighs
        the same in the loss; p > 0: a sentence of label k weighs
        ``(n / (K * n_k)) ** p`` (1: scikit-learn's "balanced"), normalised to
        a mean of 1 over the training sentences; the counts are taken in
        ``initialize`` and saved with the component, so rare functions
        (objective: 4 % of the MuLMS-AZ sentences) are not drowned.
    scorer (Optional[Callable]): defaults to
        spacy_rhetoric.function_classifier_scorer.v1 (keys prefixed
        "rhetoric_" for label_field "label", "rhetoric_<label_field>_" else).
    """
    return FunctionClassifier(
        nlp.vocab, model, name, label_field=label_field, scores_field=scores_field,
        gold_field=gold_field, spans_key=spans_key, class_weight_power=class_weight_power, scorer=scorer,
    )


class FunctionClassifier(SentencePipe):
    """Sentence-level single-label classifier writing sent._.rhetoric_label,
    sent._.rhetoric_scores and the span group doc.spans["rhetoric"] (other
    fields and key when configured so)."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "rhetoric_function_classifier",
        *,
        label_field: str = LABEL,
        scores_field: str = SCORES,
        gold_field: str = LABEL,
        spans_key: Optional[str] = None,
        class_weight_power: float = 0.0,
        scorer: Optional[Callable] = score_function_classifier,
    ) -> None:
        if not 0.0 <= float(class_weight_power) <= 1.0:
            raise RhetoricError(f"[{name}] class_weight_power must be in [0, 1], got {class_weight_power}")
        class_weight_power = float(class_weight_power)
        if spans_key is None:
            spans_key = default_spans_key(label_field)
        for arg, value in (
            ("label_field", label_field), ("scores_field", scores_field), ("gold_field", gold_field),
            ("spans_key", spans_key),
        ):
            if not isinstance(value, str) or not value:
                raise RhetoricError(f"[{name}] {arg} must be a non-empty string, got {value!r}")
        if label_field == scores_field:
            raise RhetoricError(f"[{name}] label_field and scores_field must differ, both are {label_field!r}")
        self.vocab = vocab
        self.model = model
        self.name = name
        # label_field and gold_field go to the scorer too (Pipe.score passes cfg)
        self.cfg: Dict[str, Any] = {
            "labels": [], "label_field": label_field, "scores_field": scores_field, "gold_field": gold_field,
            "spans_key": spans_key, "class_weight_power": class_weight_power, "class_weights": None,
        }
        self.scorer = scorer

    @property
    def label_field(self) -> str:
        return self.cfg.get("label_field", LABEL)

    @property
    def scores_field(self) -> str:
        return self.cfg.get("scores_field", SCORES)

    @property
    def gold_field(self) -> str:
        return self.cfg.get("gold_field", LABEL)

    @property
    def spans_key(self) -> str:
        return self.cfg.get("spans_key") or default_spans_key(self.label_field)

    def _allow_extra_label(self, label: str) -> None:
        if self.model.get_ref("output_layer").has_param("W"):
            raise RhetoricError(
                f"[{self.name}] cannot add label {label!r}: the model is already "
                f"initialized with labels {list(self.labels)}; add labels before initialize()"
            )

    @property
    def writes_vectors(self) -> bool:
        """Whether the model has a fitted vector head, i.e. this component
        fills ``sent._.rhetoric_vector`` (``spacy_rhetoric.capabilities``)."""
        return vector_width(self.model) > 0

    def _n_outputs(self) -> int:
        return len(self.labels) + vector_width(self.model)

    def set_annotations(self, docs: Iterable[Doc], scores: Floats2d) -> None:
        """Store the argmax label (``label_field``) and the label -> probability
        mapping (``scores_field``) of every sentence, and make the span group
        ``doc.spans[spans_key]`` from the same predictions: one span per
        sentence labelled with its argmax label, the group's
        ``attrs["scores"]`` the probability of that label (spaCy's spancat
        convention). A model with a vector head (``VectorHead.v1``) gives
        each sentence's vector after its probabilities, from the same pass:
        stored as ``sent._.rhetoric_vector`` (L2-normalised float32) with
        the ``sent.vector`` / ``sent.similarity`` hooks, as
        ``rhetoric_sentence_encoder`` does."""
        labels = self.labels
        width = vector_width(self.model)
        for doc, sents, rows in self._rows_per_doc(docs, scores):
            doc_scores = rows[:, : len(labels)]
            if width and len(sents):
                vectors = numpy.asarray(rows[:, len(labels) :], dtype="float32")
                vectors = vectors / numpy.maximum(numpy.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
                set_span_values(doc, VECTOR, sents, list(vectors))
                install_vector_hooks(doc)
            best = doc_scores.argmax(axis=1) if len(sents) else numpy.zeros((0,), dtype="i")
            predicted = [labels[int(i)] for i in best]
            set_span_values(doc, self.label_field, sents, predicted)
            set_span_values(
                doc,
                self.scores_field,
                sents,
                [{label: float(p) for label, p in zip(labels, r)} for r in doc_scores],
            )
            group = SpanGroup(
                doc, name=self.spans_key,
                spans=[Span(doc, s.start, s.end, label=label) for s, label in zip(sents, predicted)],
            )
            group.attrs["scores"] = numpy.asarray(
                [r[int(i)] for r, i in zip(doc_scores, best)], dtype="float32"
            )
            doc.spans[self.spans_key] = group

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp: Optional[Language] = None,
                   labels: Optional[Iterable[str]] = None) -> None:
        """As ``SentencePipe.initialize`` (labels and sizes); with
        ``class_weight_power > 0`` also count the gold labels of
        ``get_examples()`` and set the class weights. Nothing is trained
        here: a model with fitted members (``ml/members.py``) learns them in
        :meth:`fit_members`, the explicit step ``spacy train`` runs from the
        config (``spacy_rhetoric.fit_members.v1``, ``pipeline/fitting.py``)."""
        super().initialize(get_examples, nlp=nlp, labels=labels)
        power = self.cfg.get("class_weight_power", 0.0)
        self.cfg["class_weights"] = None
        if power > 0:
            counts = self.label_counts  # from SentencePipe.initialize's pass, unless the labels were given
            if counts is None:
                counts = Counter(label for eg in get_examples()
                                 for label in example_sentences(eg, self.gold_field)[1] if label is not None)
            self.cfg["class_weights"] = class_weights([counts[label] for label in self.labels], power)

    def fit_members(self, get_examples: Callable[[], Iterable[Example]],
                    members: Optional[Sequence[Model]] = None) -> Dict[str, Dict[str, int]]:
        """Fit the model's fitted members (``ml/members.py``; or ``members``
        of them), each with the settings of its config block, on every gold
        sentence of ``get_examples()``: the reference docs, whose sections
        are the true ones (a training corpus may drop sections from the
        predicted side). Call it after :meth:`initialize` (the labels);
        returns the counts of ``members.fit_members`` (empty: no member)."""
        members = fitted_members(self.model) if members is None else list(members)
        if not members:
            return {}
        if not self.labels:
            raise RhetoricError(f"[{self.name}] fit_members needs the labels: initialize the pipe first")
        docs, offsets, gold = [], [], []
        for eg in get_examples():
            doc_offsets, doc_gold = example_sentences(Example(eg.reference, eg.reference), self.gold_field)
            docs.append(eg.reference)
            offsets.append(doc_offsets)
            gold.extend(doc_gold)
        return fit_members(members, (docs, make_indices(NumpyOps(), offsets)), gold, self.labels)

    def _row_weights(self, truths: List[Truth]) -> Optional[numpy.ndarray]:
        """Per-row loss weights (None: all 1)."""
        weights = self.cfg.get("class_weights")
        if not weights:
            return None
        w = numpy.asarray(weights, dtype="float32")
        return numpy.asarray([0.0 if t == -1 else float(w[list(t)].mean()) if isinstance(t, tuple) else float(w[t])
                              for t in truths], dtype="float32")

    @property
    def gold_set_field(self) -> Optional[str]:
        """The coarse classifier also reads every acceptable gold label of a
        sentence (``sent._.rhetoric_gold_labels``, e.g. MuLMS-AZ sentences
        with two zones)."""
        return GOLD_LABELS if self.gold_field == LABEL else None

    def _loss(self, scores: Floats2d, truths: List[Truth]) -> Tuple[float, Floats2d]:
        """Mean negative log-probability of the gold labels over the labelled
        sentences and its gradient w.r.t. the Softmax logits, as thinc's
        Softmax expects.

        A sentence with one gold label ``y`` costs ``-log p_y`` (gradient
        ``p - onehot(y)``: cross-entropy); one with a set ``G`` of acceptable
        labels costs ``-log sum_{k in G} p_k``, whose gradient is ``p - q``
        with ``q = p * 1_G / p(G)`` -- any of its labels satisfies it. The
        target rows are built in numpy and copied to the model's device once
        per batch. (A CRF head reads the same gradient as one w.r.t. its
        log-marginals, which makes it the gradient of ``-log p(y_t in G)``,
        see ``ml/sequence.py``.)"""
        n_rows = scores.shape[0]
        n_labelled = sum(1 for t in truths if t != -1)
        if n_labelled == 0:
            return 0.0, self.model.ops.alloc2f(*scores.shape)
        ops = self.model.ops
        xp = ops.xp
        mask = numpy.zeros((n_rows, scores.shape[1]), dtype="float32")
        for i, t in enumerate(truths):
            if t != -1:
                mask[i, list(t) if isinstance(t, tuple) else t] = 1.0
        single = mask.sum(axis=1) == 1.0
        mask_d = ops.asarray2f(mask)
        p_gold = (scores * mask_d).sum(axis=1, keepdims=True)
        if not (mask.sum(axis=1) > 1).any():  # single labels only: target = one-hot, the cross-entropy
            target = mask_d
        else:
            shared = scores * mask_d / xp.clip(p_gold, 1e-8, None)
            target = xp.where(ops.asarray1i(single.astype("int32"))[:, None] > 0, mask_d, shared)
        row_weights = self._row_weights(truths)
        if row_weights is None:
            row_weights = (mask.sum(axis=1) > 0).astype("float32")
        weights_d = ops.asarray2f(row_weights[:, None])
        d_scores = (scores - target) * weights_d / n_labelled
        rows = numpy.flatnonzero(mask.sum(axis=1) > 0)
        nll = -xp.log(xp.clip(p_gold[xp.asarray(rows), 0], 1e-8, 1.0))
        loss = float((nll * ops.asarray1f(row_weights[rows])).sum() / n_labelled)
        return loss, d_scores

    def _initialize_model(self, X) -> None:
        self.model.get_ref("output_layer").set_dim("nO", len(self.labels))
        self._name_outputs()
        self.model.initialize(X=X)

    def _name_outputs(self) -> None:
        """Give the layers that name their outputs (the back-matter rule, the
        mixture's priors: an ``attrs["labels"]``) the pipe's labels."""
        for node in self.model.walk():
            if "labels" in node.attrs:
                node.attrs["labels"] = list(self.labels)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "FunctionClassifier":
        super().from_bytes(bytes_data, exclude=exclude)
        self._name_outputs()  # a layer the saved model did not name yet (priors set by a config at load)
        return self

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "FunctionClassifier":
        super().from_disk(path, exclude=exclude)
        self._name_outputs()
        return self
