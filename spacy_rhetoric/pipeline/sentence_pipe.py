"""``SentencePipe``: what the sentence-level trainable components share.

``rhetoric_function_classifier`` and ``rhetoric_sentence_encoder`` both map
``(docs, Ragged (start, end) sentence offsets)`` to one output row per
sentence (see ``spacy_rhetoric.ml.pooling``), learn a label set from the gold
sentences of the reference docs, and train the same way. This base class holds
that: the label set (``cfg["labels"]``), gold extraction, ``predict``,
``update``, ``get_loss`` and the label/sample part of ``initialize``. A
subclass provides ``gold_field``, ``_loss``, ``_initialize_model`` and
``set_annotations`` (and ``_allow_extra_label`` when its model fixes the
label count).

The sentences are those of ``ml.pooling.doc_sentences`` (whitespace-only
sentences left out; leading/trailing whitespace tokens not seen by the
model), at prediction time from ``doc.sents``, in ``update`` from the gold
sentences of the reference doc.
"""
from collections import Counter
from itertools import islice
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.pipeline.trainable_pipe import TrainablePipe
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples, validate_get_examples
from thinc.api import Optimizer, set_dropout_rate
from thinc.types import Floats2d

from ..errors import RhetoricError
from ..ml.pooling import Offsets, doc_sentences, example_sentence_values, example_sentences, make_indices

N_INIT_SAMPLE = 10
# A gold sentence's target: a label index (-1: none) or the indices of all its acceptable labels.
Truth = Union[int, Tuple[int, ...]]


class SentencePipe(TrainablePipe):
    """Base of the sentence-level trainable pipes (one output row per sentence)."""

    # Unlabelled gold sentences go through the model too (as context for a
    # neighbour-aware model) and get target -1; False: they are left out.
    train_on_unlabelled = True

    @property
    def gold_field(self) -> str:
        """Field (extension value) of the reference docs holding the gold labels."""
        raise NotImplementedError

    # -- labels ------------------------------------------------------------

    @property
    def labels(self) -> Tuple[str, ...]:
        """The labels currently added to the component."""
        return tuple(self.cfg["labels"])

    @property
    def label_data(self) -> List[str]:
        """The labels, for ``spacy init labels``."""
        return list(self.labels)

    def add_label(self, label: str) -> int:
        """Add a label. Returns 0 if it was already present, otherwise 1."""
        if not isinstance(label, str):
            raise RhetoricError(f"[{self.name}] labels must be strings, got {label!r}")
        if label in self.labels:
            return 0
        self._allow_extra_label(label)
        self.cfg["labels"].append(label)
        self.vocab.strings.add(label)
        return 1

    def _allow_extra_label(self, label: str) -> None:
        """Raise when ``label`` can no longer be added (e.g. the output layer
        has its size)."""

    # -- prediction --------------------------------------------------------

    def _n_outputs(self) -> int:
        """Width of an output row (for a batch without sentences)."""
        return len(self.labels)

    def predict(self, docs: Iterable[Doc]) -> Floats2d:
        """One output row per sentence of ``ml.pooling.doc_sentences``, all docs
        in order. Raises ValueError when a doc has no sentence boundaries."""
        docs = list(docs)
        offsets = [doc_sentences(doc)[1] for doc in docs]
        if not sum(len(o) for o in offsets):
            return self.model.ops.alloc2f(0, self._n_outputs())
        return self.model.predict((docs, make_indices(self.model.ops, offsets)))

    def _rows_per_doc(self, docs: Iterable[Doc], rows: Floats2d) -> Iterator[Tuple[Doc, List[Span], Floats2d]]:
        """``(doc, sentences, their rows)`` for the output of ``predict``."""
        rows = self.model.ops.to_numpy(rows)
        i = 0
        for doc in docs:
            sents = doc_sentences(doc)[0]
            doc_rows = rows[i : i + len(sents)]
            if doc_rows.shape[0] != len(sents):
                raise ValueError(
                    f"[{self.name}] {doc_rows.shape[0]} output rows for {len(sents)} sentences: "
                    "the sentence boundaries changed between predict and set_annotations"
                )
            i += len(sents)
            yield doc, sents, doc_rows

    # -- training ----------------------------------------------------------

    @property
    def gold_set_field(self) -> Optional[str]:
        """Field of the reference docs holding *every* acceptable gold label of
        a sentence (a list), or None. Where a sentence has two or more
        there, ``_gold`` gives it the tuple of their indices instead of one
        index (``FunctionClassifier._loss`` accepts any of them)."""
        return None

    def _gold(self, examples: Sequence[Example]) -> Tuple[List[Offsets], List[Truth]]:
        """Gold sentence offsets per example and one label index per sentence
        (-1: unlabelled, or a label the component does not know; such
        sentences are kept only with ``train_on_unlabelled``); a tuple of
        label indices for a sentence with several acceptable labels
        (``gold_set_field``)."""
        label_to_i = {label: i for i, label in enumerate(self.labels)}
        set_field = self.gold_set_field
        offsets, truths = [], []
        for eg in examples:
            kept = []
            fields = (self.gold_field, set_field) if set_field else (self.gold_field,)
            sent_offsets, values = example_sentence_values(eg, fields)
            for offs, (label, *rest) in zip(sent_offsets, values):
                alts = rest[0] if rest else None
                truth: Truth = label_to_i.get(label, -1) if label is not None else -1
                if truth >= 0 and alts:
                    indices = sorted({truth} | {label_to_i[a] for a in alts if a in label_to_i})
                    if len(indices) > 1:
                        truth = tuple(indices)
                if truth != -1 or self.train_on_unlabelled:
                    kept.append(offs)
                    truths.append(truth)
            offsets.append(kept)
        return offsets, truths

    def _loss(self, scores: Floats2d, truths: List[Truth]) -> Tuple[float, Floats2d]:
        """Loss and its gradient for the model output ``scores`` (one row per
        gold sentence of ``_gold``) and the label indices ``truths``."""
        raise NotImplementedError

    def get_loss(self, examples: Iterable[Example], scores: Floats2d) -> Tuple[float, Floats2d]:
        """Loss and gradient for the model output on the gold sentences of
        ``examples`` (one row per sentence of ``_gold``, as in ``update``)."""
        examples = list(examples)
        validate_examples(examples, f"{type(self).__name__}.get_loss")
        _, truths = self._gold(examples)
        if len(truths) != scores.shape[0]:
            raise ValueError(
                f"[{self.name}] get_loss: {scores.shape[0]} output rows for {len(truths)} gold sentences"
            )
        return self._loss(scores, truths)

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Learn from a batch of Examples: the model runs over the gold
        sentences of the reference docs (aligned to the predicted docs), and
        the loss of their gold labels is backpropagated (through a shared
        transformer too, if any)."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, f"{type(self).__name__}.update")
        self._require_labels()
        docs = [eg.predicted for eg in examples]
        if not any(len(doc) for doc in docs):
            return losses
        offsets, truths = self._gold(examples)
        set_dropout_rate(self.model, drop)
        # All docs go through the model (a TransformerListener expects the
        # exact batch the transformer saw), even those without labels.
        scores, backprop = self.model.begin_update((docs, make_indices(self.model.ops, offsets)))
        loss, d_scores = self._loss(scores, truths)
        backprop(d_scores)
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += loss
        return losses

    # -- initialization ----------------------------------------------------

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        labels: Optional[Iterable[str]] = None,
    ) -> None:
        """Set the labels (``labels``, e.g. from ``spacy init labels``, or all
        gold sentence labels of ``get_examples()``, sorted) and initialize the
        model on the gold sentences of the first examples."""
        validate_get_examples(get_examples, f"{type(self).__name__}.initialize")
        self.label_counts: Optional[Counter] = None  # gold label counts, when a pass over the examples made them
        if labels is not None:
            for label in labels:
                self.add_label(label)
            sample = list(islice(get_examples(), N_INIT_SAMPLE))
        else:
            # One pass: labels (counted) from every example, the first ones kept as sample.
            sample, counts = [], Counter()
            for eg in get_examples():
                if len(sample) < N_INIT_SAMPLE:
                    sample.append(eg)
                counts.update(label for label in example_sentences(eg, self.gold_field)[1] if label is not None)
            self.label_counts = counts
            for label in sorted(counts):
                self.add_label(label)
        if len(self.labels) < 2:
            raise RhetoricError(
                f"[{self.name}] needs at least 2 labels, found {list(self.labels)}: do the "
                f"reference docs carry sentence labels in field {self.gold_field!r} "
                f"(spacy_rhetoric.set_sent_labels)?"
            )
        offsets = [example_sentences(eg, self.gold_field)[0] for eg in sample]
        if not sum(len(o) for o in offsets):
            raise RhetoricError(
                f"[{self.name}] the initialization examples have no gold sentences: "
                f"the reference docs need sentence boundaries"
            )
        docs = [eg.predicted for eg in sample]
        self._initialize_model((docs, make_indices(self.model.ops, offsets)))

    def _initialize_model(self, X) -> None:
        """Initialize the model (and anything sized by it) on the sample ``X``."""
        self.model.initialize(X=X)
