"""rhetoric_function_classifier: one rhetorical-function label per sentence.

A softmax over a label set learned in ``initialize``. Predictions go to the
doc-level store (see ``spacy_rhetoric.extensions``): by default the coarse
fields, ``sent._.rhetoric_label`` and ``sent._.rhetoric_scores``; a second
instance trained on fine communicative functions (e.g. the distant labels of
``spacy-rhetoric label``) writes ``label_field = "fine_label"`` and
``scores_field = "fine_scores"`` (``sent._.rhetoric_fine_label``,
``sent._.rhetoric_fine_scores``), so both can run in one pipeline. Gold
labels are read from ``gold_field`` of the reference docs (``"label"``, where
every reader puts them). At prediction time the sentences are the predicted
doc's ``doc.sents``; in ``update`` they are the gold sentences of the
reference doc, so training does not depend on a sentencizer. Gold sentences
without a label are left out of the loss.
"""
from itertools import islice
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.pipeline.trainable_pipe import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.util import registry
from spacy.vocab import Vocab
from thinc.api import CategoricalCrossentropy, Config, Model, Optimizer, set_dropout_rate
from thinc.types import Floats2d

from ..extensions import LABEL, SCORES, labelled_spans, set_span_values
from ..ml.pooling import doc_sentence_offsets, example_sentences, make_indices

DEFAULT_CLASSIFIER_MODEL_CONFIG = """
[model]
@architectures = "spacy_rhetoric.ContextSentenceClassifier.v1"
pooling = "mean"
width = 64
encoder = "cnn"
depth = 2
window_size = 1
maxout_pieces = 3
dropout = 0.1
nO = null

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
    sentence with no prediction counts as a miss. Micro and macro P/R/F over
    the labels seen in gold or predictions, via sklearn; per-label P/R/F under
    ``rhetoric_f_per_type``. Keys: rhetoric_f_micro, rhetoric_f_macro,
    rhetoric_p_macro, rhetoric_r_macro, rhetoric_f_per_type (prefix from
    ``score_prefix(label_field)``).
    """
    from sklearn.metrics import precision_recall_fscore_support

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
    prefix = score_prefix(label_field)
    keys = ("f_micro", "f_macro", "p_macro", "r_macro")
    if not golds:
        out: Dict[str, Any] = {f"{prefix}_{k}": None for k in keys}
        out[f"{prefix}_f_per_type"] = {}
        return out
    labels = sorted(set(golds) | {p for p in preds if p is not None})
    missing = "\x00no-prediction"
    preds_s = [p if p is not None else missing for p in preds]
    p_mi, r_mi, f_mi, _ = precision_recall_fscore_support(
        golds, preds_s, labels=labels, average="micro", zero_division=0
    )
    p_ma, r_ma, f_ma, _ = precision_recall_fscore_support(
        golds, preds_s, labels=labels, average="macro", zero_division=0
    )
    ps, rs, fs, _ = precision_recall_fscore_support(
        golds, preds_s, labels=labels, average=None, zero_division=0
    )
    per_type = {
        label: {"p": float(p), "r": float(r), "f": float(f)}
        for label, p, r, f in zip(labels, ps, rs, fs)
    }
    return {
        f"{prefix}_f_micro": float(f_mi),
        f"{prefix}_f_macro": float(f_ma),
        f"{prefix}_p_macro": float(p_ma),
        f"{prefix}_r_macro": float(r_ma),
        f"{prefix}_f_per_type": per_type,
    }


@registry.scorers("spacy_rhetoric.function_classifier_scorer.v1")
def make_function_classifier_scorer() -> Callable:
    return score_function_classifier


@Language.factory(
    "rhetoric_function_classifier",
    assigns=[],
    default_config={
        "model": DEFAULT_CLASSIFIER_MODEL,
        "label_field": LABEL,
        "scores_field": SCORES,
        "gold_field": LABEL,
        "scorer": {"@scorers": "spacy_rhetoric.function_classifier_scorer.v1"},
    },
    default_score_weights={
        f"{SCORE_PREFIX}_f_micro": 0.5,
        f"{SCORE_PREFIX}_f_macro": 0.5,
        f"{SCORE_PREFIX}_p_macro": 0.0,
        f"{SCORE_PREFIX}_r_macro": 0.0,
        f"{SCORE_PREFIX}_f_per_type": None,
    },
)
def make_function_classifier(
    nlp: Language,
    name: str,
    model: Model,
    label_field: str,
    scores_field: str,
    gold_field: str,
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
    scorer (Optional[Callable]): defaults to
        spacy_rhetoric.function_classifier_scorer.v1 (keys prefixed
        "rhetoric_" for label_field "label", "rhetoric_<label_field>_" else).
    """
    return FunctionClassifier(
        nlp.vocab, model, name, label_field=label_field, scores_field=scores_field,
        gold_field=gold_field, scorer=scorer,
    )


class FunctionClassifier(TrainablePipe):
    """Sentence-level single-label classifier writing sent._.rhetoric_label
    and sent._.rhetoric_scores."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "rhetoric_function_classifier",
        *,
        label_field: str = LABEL,
        scores_field: str = SCORES,
        gold_field: str = LABEL,
        scorer: Optional[Callable] = score_function_classifier,
    ) -> None:
        for arg, value in (("label_field", label_field), ("scores_field", scores_field), ("gold_field", gold_field)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"[{name}] {arg} must be a non-empty string, got {value!r}")
        if label_field == scores_field:
            raise ValueError(f"[{name}] label_field and scores_field must differ, both are {label_field!r}")
        self.vocab = vocab
        self.model = model
        self.name = name
        # label_field and gold_field go to the scorer too (Pipe.score passes cfg)
        self.cfg: Dict[str, Any] = {
            "labels": [], "label_field": label_field, "scores_field": scores_field, "gold_field": gold_field,
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
    def labels(self) -> Tuple[str, ...]:
        """The labels currently added to the component."""
        return tuple(self.cfg["labels"])

    @property
    def label_data(self) -> List[str]:
        """The labels, for `spacy init labels`."""
        return list(self.labels)

    def add_label(self, label: str) -> int:
        """Add a label. Returns 0 if it was already present, otherwise 1."""
        if not isinstance(label, str):
            raise ValueError(f"[{self.name}] labels must be strings, got {label!r}")
        if label in self.labels:
            return 0
        output = self.model.get_ref("output_layer")
        if output.has_param("W"):
            raise ValueError(
                f"[{self.name}] cannot add label {label!r}: the model is already "
                f"initialized with labels {list(self.labels)}; add labels before initialize()"
            )
        self.cfg["labels"].append(label)
        self.vocab.strings.add(label)
        return 1

    # -- prediction ------------------------------------------------------

    def _indices(self, offsets_per_doc):
        return make_indices(self.model.ops, offsets_per_doc)

    def predict(self, docs: Iterable[Doc]) -> Floats2d:
        """Label probabilities, one row per sentence of ``doc.sents`` (all docs
        in order). Raises ValueError when a doc has no sentence boundaries."""
        docs = list(docs)
        offsets = [doc_sentence_offsets(doc) for doc in docs]
        n_sents = sum(len(o) for o in offsets)
        if n_sents == 0:
            return self.model.ops.alloc2f(0, len(self.labels))
        scores = self.model.predict((docs, self._indices(offsets)))
        return self.model.ops.asarray(scores)

    def set_annotations(self, docs: Iterable[Doc], scores: Floats2d) -> None:
        """Write the argmax label to ``label_field`` and the label -> probability
        mapping to ``scores_field`` for every sentence, one set_span_values
        call per doc and field."""
        scores = self.model.ops.to_numpy(scores)
        labels = self.labels
        row = 0
        for doc in docs:
            sents = list(doc.sents) if len(doc) else []
            doc_scores = scores[row : row + len(sents)]
            row += len(sents)
            best = doc_scores.argmax(axis=1) if len(sents) else []
            set_span_values(doc, self.label_field, sents, [labels[int(i)] for i in best])
            set_span_values(
                doc,
                self.scores_field,
                sents,
                [{label: float(p) for label, p in zip(labels, r)} for r in doc_scores],
            )

    # -- training --------------------------------------------------------

    def _gold(self, examples: Sequence[Example]):
        """Gold sentence offsets per example and one label index per sentence
        (-1 for unlabelled sentences and labels the component does not know)."""
        label_to_i = {label: i for i, label in enumerate(self.labels)}
        offsets, truths = [], []
        for eg in examples:
            offs, labels = example_sentences(eg, self.gold_field)
            offsets.append(offs)
            truths.extend(label_to_i.get(label, -1) if label is not None else -1 for label in labels)
        return offsets, truths

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Learn from a batch of Examples, using the reference docs' gold
        sentences and labels."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, "FunctionClassifier.update")
        self._require_labels()
        offsets, truths = self._gold(examples)
        if not any(t >= 0 for t in truths):
            return losses
        set_dropout_rate(self.model, drop)
        docs = [eg.predicted for eg in examples]
        scores, backprop = self.model.begin_update((docs, self._indices(offsets)))
        loss, d_scores = self._loss(scores, truths)
        backprop(d_scores)
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += loss
        return losses

    def _loss(self, scores: Floats2d, truths: List[int]) -> Tuple[float, Floats2d]:
        n_labelled = sum(1 for t in truths if t >= 0)
        if n_labelled == 0:
            return 0.0, self.model.ops.alloc2f(*scores.shape)
        xp = self.model.ops.xp
        loss_fn = CategoricalCrossentropy(normalize=False, missing_value=-1)
        d_scores = loss_fn.get_grad(scores, list(truths)) / n_labelled
        # Cross-entropy of the labelled sentences (mean); d_scores is its
        # gradient w.r.t. the Softmax logits, as thinc's Softmax expects.
        t = xp.asarray(truths, dtype="i")
        rows = xp.where(t >= 0)[0]
        probs = scores[rows, t[rows]]
        loss = float(-xp.log(xp.clip(probs, 1e-8, 1.0)).sum() / n_labelled)
        return loss, d_scores

    def get_loss(self, examples: Iterable[Example], scores: Floats2d) -> Tuple[float, Floats2d]:
        """Mean cross-entropy over the labelled gold sentences and its gradient.
        ``scores`` must have one row per gold sentence of the examples (the
        output of the model on ``example_sentences``)."""
        examples = list(examples)
        validate_examples(examples, "FunctionClassifier.get_loss")
        _, truths = self._gold(examples)
        if len(truths) != scores.shape[0]:
            raise ValueError(
                f"[{self.name}] get_loss: {scores.shape[0]} score rows for {len(truths)} gold sentences"
            )
        return self._loss(scores, truths)

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        labels: Optional[Iterable[str]] = None,
    ) -> None:
        """Set the labels (``labels``, or all gold sentence labels found in
        ``get_examples()``, sorted) and initialize the model on a sample."""
        validate_get_examples(get_examples, "FunctionClassifier.initialize")
        if labels is not None:
            for label in labels:
                self.add_label(label)
        else:
            found = set()
            for eg in get_examples():
                found.update(label for _, _, label in labelled_spans(eg.reference, field=self.gold_field))
            for label in sorted(found):
                self.add_label(label)
        if len(self.labels) < 2:
            raise ValueError(
                f"[{self.name}] needs at least 2 labels, found {list(self.labels)}: do the "
                f"reference docs carry sentence labels in field {self.gold_field!r} "
                f"(spacy_rhetoric.set_sent_labels)?"
            )
        self.model.get_ref("output_layer").set_dim("nO", len(self.labels))
        sample = list(islice(get_examples(), 10))
        offsets, _ = self._gold(sample)
        if not sum(len(o) for o in offsets):
            raise ValueError(
                f"[{self.name}] the initialization examples have no gold sentences: "
                f"the reference docs need sentence boundaries"
            )
        docs = [eg.predicted for eg in sample]
        self.model.initialize(X=(docs, self._indices(offsets)))
