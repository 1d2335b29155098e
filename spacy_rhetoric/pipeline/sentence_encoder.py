"""``rhetoric_sentence_encoder``: metric-learning sentence embeddings.

The component pools token vectors of each sentence (see
``spacy_rhetoric.SentenceEncoder.v1``) and trains them with a metric-learning
loss from ``spacy_rhetoric.losses`` (softmax cross-entropy, batch-all
triplet, ArcFace, multi-similarity, NT-Xent, ...), chosen in the config::

    [components.rhetoric_sentence_encoder.loss]
    @misc = "spacy_rhetoric.ArcFaceLoss.v1"
    margin = 0.5
    scale = 16

Outputs: ``sent._.rhetoric_vector`` (L2-normalised float32, a span
extension value: spaCy keeps it in ``doc.user_data``, so it survives
``DocBin``/``Doc.to_bytes``), and ``doc.user_span_hooks`` for "vector" and
"similarity" so that ``sent.vector`` and ``sent.similarity`` use it.

Hooks are Python callables and spaCy does NOT serialise them: a Doc read
back from a ``DocBin`` or ``Doc.from_bytes``, or made by ``nlp.pipe(...,
n_process>1)`` (spaCy sends the workers' docs back as bytes, and warns with
W109 that the hooks are lost), keeps ``sent._.rhetoric_vector`` and the
``sent._.rhetoric_similarity(other)`` method, which need nothing, and gets
``sent.vector`` / ``sent.similarity`` back with
``spacy_rhetoric.restore_vector_hooks(docs)``, called explicitly.
``process_long_text`` reinstalls them on the Doc it joins.

Loss parameters (class weights of softmax / ArcFace) are torch parameters
outside the thinc model, wrapped by thinc's ``PyTorchWrapper`` so that the
pipeline's own optimizer (``[training.optimizer]``: schedule, clipping, L2)
updates them in ``finish_update`` like every other weight. They are saved
with the component (``loss`` part of ``to_disk``/``to_bytes``: a file of
tensors, read with ``torch.load(weights_only=True)``).
"""
import io
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
import srsly
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import from_bytes, from_disk, registry, to_bytes, to_disk
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer, PyTorchWrapper_v2, torch2xp, xp2torch
from thinc.types import Floats2d

from .. import losses as _losses  # noqa: F401  (registers the metric losses)
from ..errors import RhetoricError
from ..extensions import (  # noqa: F401  (the hook functions' old import place)
    LABEL,
    VECTOR,
    get_span_value,
    install_vector_hooks,
    restore_vector_hooks,
    rhetoric_similarity,
    sentence_similarity_hook,
    sentence_vector_hook,
    set_span_values,
)
from ..ml.pooling import gold_sentences
from .sentence_pipe import SentencePipe

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
# Scorer: retrieval P@1 / MAP@R over the gold-labelled sentences
# --------------------------------------------------------------------------


def collect_vectors(
    examples: Iterable[Example], *, field: str = LABEL
) -> Tuple[numpy.ndarray, List[str], int]:
    """Stored vectors of the gold-labelled sentences of predicted docs, their
    gold labels, and how many labelled sentences had no vector."""
    vectors, labels, missing = [], [], 0
    for eg in examples:
        for span, label in zip(*gold_sentences(eg, field)):
            if label is None:
                continue
            vector = get_span_value(span, VECTOR)
            if vector is None:
                missing += 1
                continue
            vectors.append(vector)
            labels.append(label)
    if vectors:
        return numpy.vstack(vectors), labels, missing
    return numpy.zeros((0, 0), dtype="float32"), labels, missing


def sentence_encoder_score(examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
    """Leave-one-out retrieval over all gold-labelled sentences of the
    examples: ``encoder_p_at_1``, ``encoder_map_at_r`` (cosine on the stored
    L2-normalised vectors) and ``encoder_missing`` (labelled sentences
    without a vector, e.g. when predicted sentence boundaries differ)."""
    from ..evaluation.metrics import retrieval_scores

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
    assigns=["doc.user_span_hooks", "span._.rhetoric_vector"],
    default_config={
        "model": DEFAULT_ENCODER_MODEL,
        "loss": DEFAULT_ENCODER_LOSS,
        "loss_learn_rate": None,
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
    loss_learn_rate: Optional[float],
    label_field: str,
    scorer: Optional[Callable],
) -> "SentenceEncoder":
    """Create a ``rhetoric_sentence_encoder``.

    model: ``(docs, Ragged sentence offsets) -> Floats2d`` sentence vectors
        (``spacy_rhetoric.SentenceEncoder.v1``).
    loss: a ``spacy_rhetoric.losses.MetricLoss`` torch module (registered
        in ``registry.misc``).
    loss_learn_rate: no longer used (kept so that older configs and saved
        pipelines load): the loss's own parameters (class weights of softmax /
        ArcFace) are updated by the pipeline's optimizer; ``initialize`` warns
        when it is set.
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


class SentenceEncoder(SentencePipe):
    """Metric-learning sentence encoder; fills ``sent._.rhetoric_vector``."""

    writes_vectors = True

    # Only gold sentences with a known label are pooled in ``update``.
    train_on_unlabelled = False

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "rhetoric_sentence_encoder",
        *,
        loss: Any,
        loss_learn_rate: Optional[float] = None,
        label_field: str = LABEL,
        scorer: Optional[Callable] = sentence_encoder_score,
    ) -> None:
        import torch

        if not isinstance(loss, torch.nn.Module) or not hasattr(loss, "initialize"):
            raise RhetoricError(
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
            "loss_learn_rate": None if loss_learn_rate is None else float(loss_learn_rate),
            "label_field": label_field,
        }
        self._loss_ready = False
        # thinc's PyTorchWrapper around loss_fn: its finish_update(sgd) steps
        # the loss's parameters with the pipeline's optimizer. Made anew when
        # the loss is (re)initialized, so the optimizer's state for old
        # parameter shapes is never reused (keys are the wrapper's id).
        self._loss_model: Optional[Model] = None

    @property
    def gold_field(self) -> str:
        return self.cfg["label_field"]

    def _allow_extra_label(self, label: str) -> None:
        if self._loss_ready and getattr(self.loss_fn, "needs_classes", False):
            raise RhetoricError(
                f"[{self.name}] cannot add label {label!r} after initialization: the loss "
                f"{type(self.loss_fn).__name__} has one class weight per label; re-initialize instead"
            )

    # -- prediction --------------------------------------------------------

    def _n_outputs(self) -> int:
        return self.cfg.get("width") or 0

    def set_annotations(self, docs: Iterable[Doc], vectors: Floats2d) -> None:
        """Store L2-normalised float32 vectors per sentence and install the
        ``sent.vector`` / ``sent.similarity`` hooks."""
        for doc, sents, doc_vectors in self._rows_per_doc(docs, vectors):
            if len(sents):
                arr = numpy.asarray(doc_vectors, dtype="float32")
                norms = numpy.linalg.norm(arr, axis=1, keepdims=True)
                set_span_values(doc, VECTOR, sents, list(arr / numpy.maximum(norms, 1e-12)))
            install_vector_hooks(doc)

    # -- training ----------------------------------------------------------

    def _ensure_loss(self, device=None) -> None:
        """Create the loss's class weights (once) and its thinc wrapper."""
        if not self._loss_ready:
            if not self.labels or not self.cfg.get("width"):
                raise RhetoricError(f"[{self.name}] the component is not initialized: call nlp.initialize()")
            if hasattr(self.loss_fn, "set_labels"):
                # Label names in class-id order (margin-graded triplets configured by name).
                self.loss_fn.set_labels(list(self.labels))
            self.loss_fn.initialize(len(self.labels), int(self.cfg["width"]))
            self._loss_ready = True
            self._loss_model = None
        params = [p for p in self.loss_fn.parameters() if p.requires_grad]
        if device is not None and params and params[0].device != device:
            self.loss_fn.to(device)
            self._loss_model = None
        if self._loss_model is None:
            device = params[0].device if params else device
            self._loss_model = PyTorchWrapper_v2(self.loss_fn, device=device)

    def _loss(self, vectors: Floats2d, label_ids: Sequence[int]) -> Tuple[float, Floats2d]:
        """The metric loss of the vectors and its gradient (zero for fewer than
        two vectors); the loss's own parameters get their gradients too."""
        import torch

        if vectors.shape[0] < 2 or len(set(label_ids)) < 1:
            return 0.0, self.model.ops.alloc2f(*vectors.shape)
        emb = xp2torch(self.model.ops.xp.ascontiguousarray(vectors), requires_grad=True)
        self._ensure_loss(emb.device)
        self.loss_fn.train()
        # Gradients of the loss's own parameters accumulate (like thinc's)
        # until finish_update steps them with the pipeline's optimizer.
        labels = torch.as_tensor(list(label_ids), dtype=torch.long, device=emb.device)
        loss = self.loss_fn(emb, labels)
        if not torch.isfinite(loss):
            raise RhetoricError(f"[{self.name}] the loss {type(self.loss_fn).__name__} returned {float(loss)}")
        if loss.requires_grad:
            loss.backward()
        if emb.grad is None:
            return float(loss.detach()), self.model.ops.alloc2f(*vectors.shape)
        d_vectors = self.model.ops.asarray2f(torch2xp(emb.grad))
        return float(loss.detach()), d_vectors

    def finish_update(self, sgd: Optimizer) -> None:
        """Update the thinc model and the loss's own parameters with ``sgd``
        (``Language.update`` and ``spacy train`` call this after the
        ``update`` calls of a batch)."""
        super().finish_update(sgd)
        if self._loss_model is not None:
            self._loss_model.finish_update(sgd)

    def _initialize_model(self, X) -> None:
        """Model initialization, its output width and the loss's class weights."""
        self.model.initialize(X=X)
        self.cfg["width"] = int(self.model.predict(X).shape[1])
        self._loss_ready = False
        self._loss_model = None
        self._ensure_loss()
        if self.cfg.get("loss_learn_rate") is not None:
            warnings.warn(
                f"[{self.name}] loss_learn_rate = {self.cfg['loss_learn_rate']} is no longer used: the loss's "
                f"parameters are updated by the pipeline's optimizer ([training.optimizer]); drop the setting",
                UserWarning,
            )

    # -- serialization -----------------------------------------------------

    def _loss_to_bytes(self) -> bytes:
        import torch

        buf = io.BytesIO()
        state = {k: v.detach().cpu() for k, v in self.loss_fn.state_dict().items()}
        torch.save(state, buf)
        return buf.getvalue()

    def _loss_from_bytes(self, data: bytes) -> None:
        import torch

        try:
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 - an UnpicklingError for anything but tensors
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise RhetoricError(f"[{self.name}] the loss state is not a file of tensors (refused, nothing was "
                             f"run: {first[:160]})") from None
        if self.labels and self.cfg.get("width"):
            self.loss_fn.initialize(len(self.labels), int(self.cfg["width"]))
            self._loss_ready = True
        if state:
            self.loss_fn.load_state_dict(state)
        self._loss_model = None

    def _loss_from_path(self, path: Path) -> None:
        try:
            self._loss_from_bytes(path.read_bytes())
        except ValueError as err:
            raise RhetoricError(f"{path}: {err}") from None

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
                raise RhetoricError(f"[{self.name}] cannot load the model from {p}") from None

        deserialize = {
            "cfg": lambda p: self.cfg.update(srsly.read_json(p)),
            "vocab": lambda p: self.vocab.from_disk(p, exclude=exclude),
            "model": load_model,
            "loss": lambda p: self._loss_from_path(p),
        }
        from_disk(path, deserialize, exclude)
        return self
