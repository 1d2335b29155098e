"""``rhetoric_sentence_encoder``: metric-learning sentence embeddings.

The component pools token vectors of each sentence (see
``spacy_rhetoric.SentenceEncoder.v1``) and trains them with a metric-learning
loss from ``spacy_rhetoric.losses`` (softmax cross-entropy, batch-all
triplet, ArcFace, multi-similarity, NT-Xent, ...), chosen in the config::

    [components.rhetoric_sentence_encoder.loss]
    @misc = "spacy_rhetoric.ArcFaceLoss.v1"
    margin = 0.5
    scale = 16

Outputs: ``sent._.rhetoric_vector`` (L2-normalised float32, stored in
``doc.user_data`` through ``spacy_rhetoric.extensions`` so it survives
``DocBin``/``Doc.to_bytes``), and ``doc.user_span_hooks`` for "vector" and
"similarity" so that ``sent.vector`` and ``sent.similarity`` use it.

Hooks are Python callables and are NOT serialised: a Doc read back from a
``DocBin`` or ``Doc.from_bytes`` keeps ``sent._.rhetoric_vector`` and the
``sent._.rhetoric_similarity(other)`` method (both read the stored vectors),
and gets ``sent.vector`` / ``sent.similarity`` back with
``install_vector_hooks(doc)``. Running the component again also reinstalls
them.

Loss parameters (class weights of softmax / ArcFace) are torch parameters
outside the thinc model: they get their own torch Adam optimizer
(``loss_learn_rate``) and are saved with the component (``loss`` part of
``to_disk``/``to_bytes``).
"""
import io
from itertools import islice
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
import srsly
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.util import from_bytes, from_disk, registry, to_bytes, to_disk
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer, set_dropout_rate, torch2xp, xp2torch
from thinc.types import Floats2d

from .. import losses as _losses  # noqa: F401  (registers the metric losses)
from ..extensions import LABEL, STORE_KEY, VECTOR, get_span_value, set_span_values
from ..ml.pooling import Offsets, doc_sentence_offsets, example_sentences, make_indices

default_model_config = """
[model]
@architectures = "spacy_rhetoric.SentenceEncoder.v1"
pooling = "mean"
projection_width = null
projection = "linear"

[model.tok2vec]
@architectures = "spacy.HashEmbedCNN.v2"
pretrained_vectors = null
width = 96
depth = 4
embed_size = 2000
window_size = 1
maxout_pieces = 3
subword_features = true
"""
DEFAULT_ENCODER_MODEL = Config().from_str(default_model_config)["model"]

default_loss_config = """
[loss]
@misc = "spacy_rhetoric.SoftmaxLoss.v1"
"""
DEFAULT_ENCODER_LOSS = Config().from_str(default_loss_config)["loss"]

SCORE_PREFIX = "encoder"


# --------------------------------------------------------------------------
# Hooks: sent.vector / sent.similarity from the stored vectors
# --------------------------------------------------------------------------


def _default_span_vector(span: Span) -> numpy.ndarray:
    """spaCy's own Span.vector (mean of token vectors), without the hooks."""
    if not len(span):
        return numpy.zeros((0,), dtype="float32")
    return numpy.asarray([t.vector for t in span], dtype="float32").mean(axis=0)


def sentence_vector_hook(span: Span) -> numpy.ndarray:
    """``doc.user_span_hooks["vector"]``: the encoder's vector for a sentence
    span; spans that are not encoded sentences fall back to spaCy's mean of
    token vectors."""
    vector = get_span_value(span, VECTOR)
    if vector is None:
        return _default_span_vector(span)
    return vector


def _vector_of(obj: Any) -> numpy.ndarray:
    if isinstance(obj, Span):
        return sentence_vector_hook(obj)
    return numpy.asarray(obj.vector, dtype="float32")


def _cosine(a: numpy.ndarray, b: numpy.ndarray) -> float:
    a = numpy.asarray(a, dtype="float32").ravel()
    b = numpy.asarray(b, dtype="float32").ravel()
    if a.shape != b.shape or not a.size:
        return 0.0
    norm = float(numpy.linalg.norm(a) * numpy.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0


def sentence_similarity_hook(span: Span, other: Any) -> float:
    """``doc.user_span_hooks["similarity"]``: cosine of the encoder vectors
    (``other`` may be a Span, Doc or Token)."""
    return _cosine(sentence_vector_hook(span), _vector_of(other))


def rhetoric_similarity(span: Span, other: Any) -> float:
    """``sent._.rhetoric_similarity(other)``: like the hook, but works without
    hooks (e.g. on a Doc read back from a DocBin)."""
    return sentence_similarity_hook(span, other)


def install_vector_hooks(doc: Doc) -> Doc:
    """Make ``sent.vector`` / ``sent.similarity`` use the stored encoder
    vectors. Idempotent; call it on Docs read from a DocBin or bytes."""
    doc.user_span_hooks["vector"] = sentence_vector_hook
    doc.user_span_hooks["similarity"] = sentence_similarity_hook
    return doc


def install_encoder_extensions() -> None:
    if not Span.has_extension("rhetoric_similarity"):
        Span.set_extension("rhetoric_similarity", method=rhetoric_similarity)


install_encoder_extensions()


# --------------------------------------------------------------------------
# Scorer: retrieval P@1 / MAP@R over the gold-labelled sentences
# --------------------------------------------------------------------------


def collect_vectors(
    examples: Iterable[Example], *, field: str = LABEL
) -> Tuple[numpy.ndarray, List[str], int]:
    """Stored vectors of the gold-labelled sentences of predicted docs, their
    gold labels, and how many labelled sentences had no vector."""
    vectors, labels, missing = [], [], 0
    for eg in examples:
        offsets, gold = example_sentences(eg, field)
        store = eg.predicted.user_data.get(STORE_KEY, {}).get(VECTOR, {})
        for (start, end), label in zip(offsets, gold):
            if label is None:
                continue
            stored = store.get(f"{start}:{end}")
            if stored is None:
                missing += 1
                continue
            vectors.append(numpy.frombuffer(stored, dtype="float32"))
            labels.append(label)
    if vectors:
        return numpy.vstack(vectors), labels, missing
    return numpy.zeros((0, 0), dtype="float32"), labels, missing


def sentence_encoder_score(examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
    """Leave-one-out retrieval over all gold-labelled sentences of the
    examples: ``encoder_p_at_1``, ``encoder_map_at_r`` (cosine on the stored
    L2-normalised vectors) and ``encoder_missing`` (labelled sentences
    without a vector, e.g. when predicted sentence boundaries differ)."""
    from ..evaluation import retrieval_scores

    vectors, labels, missing = collect_vectors(examples)
    scores: Dict[str, Any] = {
        f"{SCORE_PREFIX}_p_at_1": None,
        f"{SCORE_PREFIX}_map_at_r": None,
        f"{SCORE_PREFIX}_missing": missing,
    }
    if len(labels) >= 2:
        result = retrieval_scores(vectors, labels)
        scores[f"{SCORE_PREFIX}_p_at_1"] = float(result["p_at_1"])
        scores[f"{SCORE_PREFIX}_map_at_r"] = float(result["map_at_r"])
    return scores


@registry.scorers("spacy_rhetoric.sentence_encoder_scorer.v1")
def make_sentence_encoder_scorer() -> Callable:
    return sentence_encoder_score


# --------------------------------------------------------------------------
# Factory and pipe
# --------------------------------------------------------------------------


@Language.factory(
    "rhetoric_sentence_encoder",
    assigns=["doc.user_data"],
    default_config={
        "model": DEFAULT_ENCODER_MODEL,
        "loss": DEFAULT_ENCODER_LOSS,
        "loss_learn_rate": 0.001,
        "label_field": LABEL,
        "scorer": {"@scorers": "spacy_rhetoric.sentence_encoder_scorer.v1"},
    },
    default_score_weights={
        f"{SCORE_PREFIX}_p_at_1": 0.5,
        f"{SCORE_PREFIX}_map_at_r": 0.5,
        f"{SCORE_PREFIX}_missing": None,
    },
)
def make_sentence_encoder(
    nlp: Language,
    name: str,
    model: Model,
    loss: Any,
    loss_learn_rate: float,
    label_field: str,
    scorer: Optional[Callable],
) -> "SentenceEncoder":
    """Create a ``rhetoric_sentence_encoder``.

    model: ``(docs, Ragged sentence offsets) -> Floats2d`` sentence vectors
        (``spacy_rhetoric.SentenceEncoder.v1``).
    loss: a ``spacy_rhetoric.losses.MetricLoss`` torch module (registered
        in ``registry.misc``).
    loss_learn_rate: learning rate of the torch Adam optimizer for the loss's
        own parameters (class weights of softmax / ArcFace).
    label_field: the per-sentence gold field of the reference Doc.
    """
    return SentenceEncoder(
        nlp.vocab,
        model,
        name,
        loss=loss,
        loss_learn_rate=loss_learn_rate,
        label_field=label_field,
        scorer=scorer,
    )


class SentenceEncoder(TrainablePipe):
    """Metric-learning sentence encoder; fills ``sent._.rhetoric_vector``."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "rhetoric_sentence_encoder",
        *,
        loss: Any,
        loss_learn_rate: float = 0.001,
        label_field: str = LABEL,
        scorer: Optional[Callable] = sentence_encoder_score,
    ) -> None:
        import torch

        if not isinstance(loss, torch.nn.Module) or not hasattr(loss, "initialize"):
            raise ValueError(
                f"[{name}] 'loss' must be a spacy_rhetoric metric loss (a torch.nn.Module with "
                f"initialize(n_classes, width) and forward(embeddings, labels)), got {type(loss).__name__}"
            )
        self.vocab = vocab
        self.model = model
        self.name = name
        self.loss_fn = loss
        self.scorer = scorer
        self.cfg: Dict[str, Any] = {
            "labels": [],
            "width": None,
            "loss_learn_rate": float(loss_learn_rate),
            "label_field": label_field,
        }
        self._loss_ready = False
        self._loss_optimizer = None

    # -- labels ------------------------------------------------------------

    @property
    def labels(self) -> Tuple[str, ...]:
        return tuple(self.cfg["labels"])

    @property
    def label_data(self) -> List[str]:
        return list(self.labels)

    def add_label(self, label: str) -> int:
        if not isinstance(label, str):
            raise ValueError(f"[{self.name}] labels must be strings, got {type(label).__name__}")
        if label in self.labels:
            return 0
        if self._loss_ready and getattr(self.loss_fn, "needs_classes", False):
            raise ValueError(
                f"[{self.name}] cannot add label {label!r} after initialization: the loss "
                f"{type(self.loss_fn).__name__} has one class weight per label; re-initialize instead"
            )
        self.cfg["labels"].append(label)
        self.vocab.strings.add(label)
        return 1

    # -- prediction --------------------------------------------------------

    def predict(self, docs: Iterable[Doc]) -> List[Floats2d]:
        """One array of sentence vectors per doc (rows in ``doc.sents`` order)."""
        docs = list(docs)
        offsets = [doc_sentence_offsets(doc) for doc in docs]
        n_sents = sum(len(o) for o in offsets)
        width = self.cfg.get("width") or 0
        if not n_sents:
            return [self.model.ops.alloc2f(0, width) for _ in docs]
        vectors = self.model.predict((docs, make_indices(self.model.ops, offsets)))
        out, i = [], 0
        for o in offsets:
            out.append(vectors[i : i + len(o)])
            i += len(o)
        return out

    def set_annotations(self, docs: Iterable[Doc], vectors: Sequence[Floats2d]) -> None:
        """Store L2-normalised float32 vectors per sentence and install the
        ``sent.vector`` / ``sent.similarity`` hooks."""
        for doc, doc_vectors in zip(docs, vectors):
            sents = list(doc.sents) if len(doc) else []
            arr = numpy.asarray(self.model.ops.to_numpy(doc_vectors), dtype="float32")
            if len(sents) != arr.shape[0]:
                raise ValueError(
                    f"[{self.name}] {arr.shape[0]} vectors for {len(sents)} sentences: "
                    "the sentence boundaries changed between predict and set_annotations"
                )
            if len(sents):
                norms = numpy.linalg.norm(arr, axis=1, keepdims=True)
                arr = arr / numpy.maximum(norms, 1e-12)
                set_span_values(doc, VECTOR, sents, list(arr.astype("float32")))
            install_vector_hooks(doc)

    # -- training ----------------------------------------------------------

    def _gold(self, examples: Sequence[Example]) -> Tuple[List[Offsets], List[int]]:
        """Gold sentence offsets (only sentences with a known label) per
        example, and their label indices."""
        label_ids = {label: i for i, label in enumerate(self.labels)}
        field = self.cfg["label_field"]
        offsets_per_doc: List[Offsets] = []
        ids: List[int] = []
        for eg in examples:
            offsets, labels = example_sentences(eg, field)
            kept = []
            for offset, label in zip(offsets, labels):
                if label is not None and label in label_ids:
                    kept.append(offset)
                    ids.append(label_ids[label])
            offsets_per_doc.append(kept)
        return offsets_per_doc, ids

    def _ensure_loss(self, device=None) -> None:
        """Create the loss's class weights (once) and its torch optimizer."""
        import torch

        if not self._loss_ready:
            if not self.labels or not self.cfg.get("width"):
                raise ValueError(f"[{self.name}] the component is not initialized: call nlp.initialize()")
            if hasattr(self.loss_fn, "set_labels"):
                # Label names in class-id order (margin-graded triplets configured by name).
                self.loss_fn.set_labels(list(self.labels))
            self.loss_fn.initialize(len(self.labels), int(self.cfg["width"]))
            self._loss_ready = True
        params = [p for p in self.loss_fn.parameters() if p.requires_grad]
        if device is not None and params and params[0].device != device:
            self.loss_fn.to(device)
            self._loss_optimizer = None
        if params and self._loss_optimizer is None:
            self._loss_optimizer = torch.optim.Adam(params, lr=self.cfg["loss_learn_rate"])

    def _loss_and_gradient(self, vectors: Floats2d, label_ids: Sequence[int]) -> Tuple[float, Floats2d]:
        import torch

        if vectors.shape[0] < 2 or len(set(label_ids)) < 1:
            return 0.0, self.model.ops.alloc2f(*vectors.shape)
        emb = xp2torch(self.model.ops.xp.ascontiguousarray(vectors), requires_grad=True)
        self._ensure_loss(emb.device)
        self.loss_fn.train()
        # Gradients of the loss's own parameters accumulate (like thinc's)
        # until finish_update steps the torch optimizer.
        labels = torch.as_tensor(list(label_ids), dtype=torch.long, device=emb.device)
        loss = self.loss_fn(emb, labels)
        if not torch.isfinite(loss):
            raise ValueError(f"[{self.name}] the loss {type(self.loss_fn).__name__} returned {float(loss)}")
        if loss.requires_grad:
            loss.backward()
        if emb.grad is None:
            return float(loss.detach()), self.model.ops.alloc2f(*vectors.shape)
        d_vectors = self.model.ops.asarray2f(torch2xp(emb.grad))
        return float(loss.detach()), d_vectors

    def get_loss(self, examples: Iterable[Example], vectors: Floats2d) -> Tuple[float, Floats2d]:
        """Loss and gradient for the sentence vectors of the gold-labelled
        sentences of ``examples`` (as produced by the model in ``update``)."""
        examples = list(examples)
        validate_examples(examples, "SentenceEncoder.get_loss")
        _, label_ids = self._gold(examples)
        if len(label_ids) != vectors.shape[0]:
            raise ValueError(f"[{self.name}] {vectors.shape[0]} vectors for {len(label_ids)} labelled sentences")
        return self._loss_and_gradient(vectors, label_ids)

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Pool the gold sentences that carry a label, apply the metric loss,
        backpropagate through the model (and a shared transformer, if any)
        and step the loss's own optimizer."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, "SentenceEncoder.update")
        docs = [eg.predicted for eg in examples]
        if not any(len(doc) for doc in docs):
            return losses
        offsets_per_doc, label_ids = self._gold(examples)
        set_dropout_rate(self.model, drop)
        # All docs go through the model (a TransformerListener expects the
        # exact batch the transformer saw), even those without labels.
        vectors, backprop = self.model.begin_update((docs, make_indices(self.model.ops, offsets_per_doc)))
        loss, d_vectors = self._loss_and_gradient(vectors, label_ids)
        backprop(d_vectors)
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += loss
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        """Update the thinc model with ``sgd`` and the loss's own parameters
        with their torch optimizer (``Language.update`` and ``spacy train``
        call this after the ``update`` calls of a batch)."""
        super().finish_update(sgd)
        if self._loss_optimizer is not None:
            self._loss_optimizer.step()
            self._loss_optimizer.zero_grad()

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        labels: Optional[Iterable[str]] = None,
    ) -> None:
        """Labels (from ``labels``, e.g. ``init labels``, or the gold
        sentences), model initialization and the loss's class weights."""
        validate_get_examples(get_examples, "SentenceEncoder.initialize")
        if labels is not None:
            for label in labels:
                self.add_label(label)
            subbatch = list(islice(get_examples(), 10))
        else:
            # One pass over the data: labels from every example, the first
            # ten kept as the model's initialization sample.
            subbatch = []
            for eg in get_examples():
                if len(subbatch) < 10:
                    subbatch.append(eg)
                for label in example_sentences(eg, self.cfg["label_field"])[1]:
                    if label is not None:
                        self.add_label(label)
        if len(self.labels) < 2:
            raise ValueError(
                f"[{self.name}] needs at least 2 sentence labels in the '{self.cfg['label_field']}' "
                f"field of the training data, found {list(self.labels)}"
            )
        docs = [eg.predicted for eg in subbatch]
        offsets = [example_sentences(eg, self.cfg["label_field"])[0] for eg in subbatch]
        if not sum(len(o) for o in offsets):
            raise ValueError(f"[{self.name}] the initialization examples have no sentences")
        X = (docs, make_indices(self.model.ops, offsets))
        self.model.initialize(X=X)
        self.cfg["width"] = int(self.model.predict(X).shape[1])
        self._loss_ready = False
        self._loss_optimizer = None
        self._ensure_loss()

    # -- serialization -----------------------------------------------------

    def _loss_to_bytes(self) -> bytes:
        import torch

        buf = io.BytesIO()
        state = {k: v.detach().cpu() for k, v in self.loss_fn.state_dict().items()}
        torch.save(state, buf)
        return buf.getvalue()

    def _loss_from_bytes(self, data: bytes) -> None:
        import torch

        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        if self.labels and self.cfg.get("width"):
            self.loss_fn.initialize(len(self.labels), int(self.cfg["width"]))
            self._loss_ready = True
        if state:
            self.loss_fn.load_state_dict(state)
        self._loss_optimizer = None

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        self._validate_serialization_attrs()
        serialize = {
            "cfg": lambda: srsly.json_dumps(self.cfg),
            "vocab": lambda: self.vocab.to_bytes(exclude=exclude),
            "model": lambda: self.model.to_bytes(),
            "loss": self._loss_to_bytes,
        }
        return to_bytes(serialize, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude=tuple()) -> "SentenceEncoder":
        self._validate_serialization_attrs()
        deserialize = {
            "cfg": lambda b: self.cfg.update(srsly.json_loads(b)),
            "vocab": lambda b: self.vocab.from_bytes(b, exclude=exclude),
            "model": lambda b: self.model.from_bytes(b),
            "loss": self._loss_from_bytes,
        }
        from_bytes(bytes_data, deserialize, exclude)
        return self

    def to_disk(self, path, *, exclude=tuple()) -> None:
        self._validate_serialization_attrs()
        serialize = {
            "cfg": lambda p: srsly.write_json(p, self.cfg),
            "vocab": lambda p: self.vocab.to_disk(p, exclude=exclude),
            "model": lambda p: self.model.to_disk(p),
            "loss": lambda p: p.write_bytes(self._loss_to_bytes()),
        }
        to_disk(path, serialize, exclude)

    def from_disk(self, path, *, exclude=tuple()) -> "SentenceEncoder":
        self._validate_serialization_attrs()

        def load_model(p):
            try:
                self.model.from_bytes(p.read_bytes())
            except AttributeError:
                raise ValueError(f"[{self.name}] cannot load the model from {p}") from None

        deserialize = {
            "cfg": lambda p: self.cfg.update(srsly.read_json(p)),
            "vocab": lambda p: self.vocab.from_disk(p, exclude=exclude),
            "model": load_model,
            "loss": lambda p: self._loss_from_bytes(p.read_bytes()),
        }
        from_disk(path, deserialize, exclude)
        return self
