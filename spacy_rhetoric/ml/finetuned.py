"""A member of the full-paper mixture (``ml/experts.py``) that fine-tunes the
top layers of a Hugging Face encoder (all-MiniLM-L6-v2 by default) on the
sentences of the full papers in the member-fitting step
(``pipeline/fitting.py``), where the closed-form members
(``ml/tfidf_member.py``) are fitted.

Why. On the MuLMS-AZ folds (``benchmarks/fullpaper/bench_fullpaper.py``) a logistic
regression over *frozen* MiniLM vectors was the weakest member; the same
encoder fine-tuned on the sentence with its heading and neighbours read it
better than every other member. Fine-tuning needs gradients
through the encoder, which the closed-form members do not have, and the
network member's tok2vec is trained for thousands of ``spacy train`` steps
over whole docs, far too long for a transformer on a CPU; fitting it once,
like the other members, on the reference sentences before training costs a
few CPU minutes.

What it reads: each sentence as a pair of texts, the sentence itself and
"heading | end of the previous sentence | start of the next one"
(``context_chars`` characters of each; the heading is
``sent._.rhetoric_heading``, else the section category), truncated to
``max_length`` word pieces. The mean of the top layer's hidden states over
the pair, beside ``fitted.context_matrix`` (section one-hot, positions), goes
through a linear layer and a softmax.

How it learns: the word embeddings and the bottom ``frozen_layers`` layers
stay as they are, so their outputs are computed once per sentence
(inference mode) and cached; the top layers and the linear layer are
trained with AdamW (``learn_rate`` and ``head_learn_rate``, ``weight_decay``,
linear warm-up over the first ``warmup`` fraction of the steps and linear
decay, gradients clipped to ``grad_clip``), ``epochs`` passes in batches of
``batch_size`` sentences drawn by generators seeded with ``seed`` (torch's
forked for the fit, :func:`local_torch_seed`, so no global state changes), by the
project's one torch loop (``ml.training_loop.train_loop``, with its progress
bar), weighted cross-entropy (class weights ``count ** -class_weight_power``,
normalised to mean 1 over the sentences). ``balance_sources``: when the
papers come from several corpora (``doc._.rhetoric_source``, set by the
MuLMS-AZ and ART / CoreSC readers), each step's sentences are drawn (with
replacement) so that every corpus weighs the same, whatever its size (225
chemistry papers beside 29 materials-science ones), or, with ``source_power``
p > 0, so that each corpus's share is its size to the power p (temperature
sampling: 0.5 gives the square roots); from one corpus, each epoch is a
permutation. Nothing here is pickled: the
whole fine-tuned encoder (every layer's weights as safetensors bytes with
their SHA-256, its config and its tokenizer files), the linear layer and the
vector head are stored in the member's state with the settings
(``ml/finetuned_io.py``), so a saved pipeline loads and predicts the same
without the base model's package and without the network. The encoder
itself (bottom and top layers, prediction): ``ml/finetuned_encoder.py``.

The member is a fitted member (``ml/members.py``): the ``experts`` layer
leaves it out of ``spacy train``'s updates and averages it in at prediction
where it speaks (``members.speaks``). The torch modules live in its
:class:`FinetunedShim`, which thinc serialises with the model (safetensors
bytes and the settings, no pickle), moves with it (``to_device``) and frees
with it; it runs on ``util.torch_device()``, the device of spaCy's current
ops, and hands its probabilities to the model's.
"""
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy
import srsly
from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from .devices import to_host
from .finetuned_encoder import POOLINGS, FinetunedEncoder, autocast, resolve_precision
from .finetuned_io import encoder_from_state, encoder_state, legacy_encoder
from .members import MemberShim, fitted_member, row_doc_values, row_values
from .segments import sections_of, sentence_headings

SEPARATOR = " | "


@dataclass
class VectorHead:
    """The trunk's second head (``spacy_rhetoric.VectorHead.v1``): the
    pooled states -> a linear layer of ``width`` -> L2-normalised
    ``sent._.rhetoric_vector``, trained beside the classifier's
    cross-entropy with the metric ``loss`` (a ``losses.MetricLoss``) times
    ``weight``, on each sentence's ``label_field`` gold value (its fine
    class: a MuLMS-AZ zone, a CoreSC concept), else its coarse gold label.
    ``pooling``: the states it reads, the mean over the whole pair
    (``"pair"``: the sentence, its heading and the ends of its neighbours,
    as the label head reads them) or over the sentence's own word pieces
    (``"sentence"``: the first segment of the pair; the context still
    reaches them through attention, but two neighbours no longer share most
    of what is averaged)."""

    width: int
    loss: Any
    weight: float = 1.0
    label_field: str = "fine_label"
    pooling: str = "pair"

    def __post_init__(self):
        if self.width < 1 or self.weight < 0:
            raise RhetoricError(f"VectorHead: width >= 1 and weight >= 0, got {self.width} and {self.weight}")
        if self.pooling not in POOLINGS:
            raise RhetoricError(f"VectorHead: pooling is one of {POOLINGS}, got {self.pooling!r}")


def pair_texts(X: Tuple[List[Doc], Ragged], texts: Sequence[str], context_chars: int, use_sections: bool = True
               ) -> List[str]:
    """Per sentence row of ``X`` (``texts``: their texts), the context text
    of its pair: "heading | end of the previous sentence | start of the next"
    (module docstring; without ``use_sections`` the heading is left out)."""
    names = sections_of(X)
    headings = sentence_headings(X) if use_sections else [None] * len(names)
    contexts, row = [], 0
    for n in to_host(X[1].lengths).tolist():
        for i in range(n):
            heading = headings[row + i] or (names[row + i] if use_sections else "")
            prev = texts[row + i - 1][-context_chars:] if i > 0 else ""
            nxt = texts[row + i + 1][:context_chars] if i + 1 < n else ""
            contexts.append(SEPARATOR.join([str(heading or ""), prev, nxt]))
        row += n
    return contexts


@dataclass(frozen=True)
class FinetunedSettings:
    """Every setting of the member's fine-tune, written once: the config
    block ``FinetunedMember.v1`` takes these fields as its arguments
    (``experts.build_finetuned_member``), :func:`finetuned_expert` takes
    them as keywords, the member records them in its ``attrs`` (saved with
    the pipeline) and :func:`fine_tune` reads nothing else.

    ``name``: the Hugging Face encoder (resolved offline); ``epochs``
    passes over the labelled sentences in batches of ``batch_size``;
    AdamW with ``learn_rate`` for the top layers and ``head_learn_rate`` for
    the linear layer and the vector head, ``weight_decay``, a linear
    warm-up over the first ``warmup`` fraction of the steps and linear
    decay, gradients clipped to norm ``grad_clip`` (0: no clipping); pairs of
    ``max_length`` word pieces, ``context_chars`` characters of each
    neighbour; the bottom ``frozen_layers`` layers frozen; class weights
    ``count ** -class_weight_power``; ``balance_sources`` /
    ``source_power``: the draws across source corpora (module docstring);
    ``batch_by_source``: with ``balance_sources`` and more than one source
    corpus, each batch drawn from one corpus (chosen with the corpora's
    shares), so that the vector head's metric loss
    compares sentences labelled in one scheme (an AZ-CL OWN sentence and a
    CSAbstruct method sentence are no negatives of each other);
    ``train_precision``: the number format of the fine-tune's forward passes
    ("fp32"; "bf16": bfloat16 autocast, the weights and the optimizer in
    float32; "auto": bfloat16 where the device multiplies it in hardware,
    ``finetuned_encoder.resolve_precision``); ``seed``: the seed of the
    member's own generators (the configs set it
    to ``${system.seed}``; torch's global generator is left as it was)."""

    name: str = "sentence-transformers/all-MiniLM-L6-v2"
    epochs: float = 1.0
    frozen_layers: int = 2
    learn_rate: float = 8e-5
    head_learn_rate: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.1
    grad_clip: float = 1.0
    batch_size: int = 16
    max_length: int = 128
    context_chars: int = 60
    class_weight_power: float = 0.5
    balance_sources: bool = True
    source_power: float = 0.0
    batch_by_source: bool = False
    train_precision: str = "fp32"
    seed: int = 0

    def __post_init__(self):
        for field in fields(self):  # the declared types, as the config gives them (an int for a float too)
            object.__setattr__(self, field.name, field.type(getattr(self, field.name)))
        if not 0.0 <= self.source_power <= 1.0:
            raise RhetoricError(f"a fine-tuned member needs 0 <= source_power <= 1 (got {self.source_power})")
        if self.epochs <= 0 or self.batch_size < 1 or self.max_length < 8 or self.context_chars < 0:
            raise RhetoricError("a fine-tuned member needs epochs > 0, batch_size >= 1, max_length >= 8 and "
                                f"context_chars >= 0 (got {self.epochs}, {self.batch_size}, {self.max_length}, "
                                f"{self.context_chars})")
        if self.train_precision not in ("auto", "fp32", "bf16"):
            raise RhetoricError(f"a fine-tuned member's train_precision is auto, fp32 or bf16 (got {self.train_precision!r})")
        if not 0.0 <= self.warmup <= 1.0 or self.weight_decay < 0 or self.grad_clip < 0:
            raise RhetoricError("a fine-tuned member needs 0 <= warmup <= 1, weight_decay >= 0 and grad_clip >= 0 "
                                f"(got {self.warmup}, {self.weight_decay}, {self.grad_clip})")

    @classmethod
    def from_attrs(cls, attrs: Dict[str, Any]) -> "FinetunedSettings":
        """The settings a member recorded in its ``attrs``."""
        return cls(**{field.name: attrs[field.name] for field in fields(cls)})


def source_weights(X, pick: Sequence[int], power: float = 0.0) -> Optional[numpy.ndarray]:
    """Each row of ``pick``'s draw probability so that every source corpus
    (``doc._.rhetoric_source``; docs without one are a source of their own)
    has a share of the draws proportional to its row count to the ``power``
    (temperature sampling across corpora: 0, every corpus the same share;
    1, each as large as it is); None when the rows come from one source."""
    from ..extensions import SOURCE

    sources = row_doc_values(X, SOURCE)
    picked = [sources[i] for i in pick]
    counts = Counter(picked)
    if len(counts) < 2:
        return None
    weights = numpy.asarray([counts[s] ** (power - 1.0) for s in picked], dtype="float64")
    return weights / weights.sum()


def source_groups(X, pick: Sequence[int]) -> Dict[Any, numpy.ndarray]:
    """The positions in ``pick`` of each source corpus's rows
    (``doc._.rhetoric_source``; docs without one form one source)."""
    from ..extensions import SOURCE

    sources = row_doc_values(X, SOURCE)
    groups: Dict[Any, List[int]] = {}
    for position, row in enumerate(pick):
        groups.setdefault(sources[row], []).append(position)
    return {source: numpy.asarray(rows, dtype="int64") for source, rows in groups.items()}


def source_batches(groups: Dict[Any, numpy.ndarray], draw: numpy.ndarray, n_batches: int, size: int,
                   generator: numpy.random.RandomState) -> numpy.ndarray:
    """``n_batches`` batches of ``size`` positions, each from one source of
    ``groups``: the source chosen with its share of ``draw`` (the per-row
    draw probabilities, :func:`source_weights`), its rows drawn without
    replacement within the batch (with it when the source has fewer)."""
    names = list(groups)
    shares = numpy.asarray([draw[groups[name]].sum() for name in names], dtype="float64")
    chosen = generator.choice(len(names), size=n_batches, p=shares / shares.sum())
    out = [generator.choice(groups[names[c]], size=size, replace=len(groups[names[c]]) < size) for c in chosen]
    return numpy.concatenate(out) if out else numpy.zeros((0,), dtype="int64")


@contextmanager
def local_torch_seed(seed: int) -> Iterator[None]:
    """Inside the block torch's CPU generator (and that of the CUDA device
    the member runs on, ``util.torch_device``) start from ``seed``; after
    it they are as they were (``torch.random.fork_rng``): the fine-tune's
    weight initialisation and dropout draws are its own, and no other
    part of the process sees its seed."""
    import torch

    from ..util import torch_device

    device = torch_device()
    cuda = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.random.default_generator.manual_seed(int(seed))
        for index in cuda:
            with torch.cuda.device(index):
                torch.cuda.manual_seed(int(seed))
        yield


def fine_tune(attrs: Dict[str, Any], X, texts: Sequence[str], context: numpy.ndarray, pick: Sequence[int],
              y: Sequence[str], vectors: Optional[VectorHead] = None, classes_of_vectors: Sequence[str] = ()
              ) -> Tuple[FinetunedEncoder, List[str]]:
    """Fine-tune an encoder with the :class:`FinetunedSettings` the member
    recorded in its ``attrs`` (and its ``use_sections``) on the rows ``pick``
    of ``X`` with gold labels ``y``; ``texts`` and ``context``: every row's
    text and ``members.context_matrix``. With ``vectors`` (a
    :class:`VectorHead`), its head learns too, from ``classes_of_vectors``
    (one class per row of ``pick``), its loss times its weight added to the
    cross-entropy of each batch. Every draw comes from generators seeded
    with ``seed`` (:func:`local_torch_seed`, a numpy ``RandomState``): the
    same settings and data give the same encoder. Returns the encoder and
    its classes."""
    with local_torch_seed(int(attrs["seed"])):
        return _fine_tune(FinetunedSettings.from_attrs(attrs), bool(attrs["use_sections"]), X, texts, context,
                          pick, y, vectors, classes_of_vectors)


def _fine_tune(settings: FinetunedSettings, use_sections: bool, X, texts, context, pick, y, vectors,
               classes_of_vectors) -> Tuple[FinetunedEncoder, List[str]]:
    import torch

    from .training_loop import LoopSettings, train_loop

    classes = sorted(set(y))
    runtime = FinetunedEncoder(settings.name, settings.frozen_layers, context.shape[1], len(classes),
                               settings.max_length, vector_width=vectors.width if vectors is not None else 0,
                               vector_pooling=vectors.pooling if vectors is not None else "pair")
    metric = None
    if vectors is not None:
        vector_classes = sorted(set(classes_of_vectors))
        metric_target = torch.as_tensor([vector_classes.index(c) for c in classes_of_vectors], dtype=torch.long,
                                        device=runtime.device)
        metric = vectors.loss
        metric.initialize(len(vector_classes), vectors.width)
        metric.set_labels(vector_classes)
        metric.to(runtime.device)
    contexts = pair_texts(X, texts, settings.context_chars, use_sections)
    rows_context = context[list(pick)]
    target = numpy.asarray([classes.index(label) for label in y], dtype="int64")
    counts = numpy.bincount(target, minlength=len(classes)).astype("float64")
    weights = counts ** -settings.class_weight_power
    weights = weights / (weights[target].mean())
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.as_tensor(weights, dtype=torch.float32, device=runtime.device))
    size = settings.batch_size
    per_epoch = max(1, len(pick) // size)
    n_epochs = int(numpy.ceil(settings.epochs))
    total = max(1, int(round(settings.epochs * per_epoch)))
    generator = numpy.random.RandomState(settings.seed)
    # Each epoch's order, drawn up front (the same draws as one per epoch), so
    # that the frozen layers run only on the sentences the steps will read
    # (a fraction of them when ``epochs`` < 1).
    draw = source_weights(X, pick, settings.source_power) if settings.balance_sources else None
    groups = source_groups(X, pick) if draw is not None and settings.batch_by_source else None
    orders = [generator.permutation(len(pick)) if draw is None else
              generator.choice(len(pick), size=per_epoch * size, replace=True, p=draw) if groups is None else
              source_batches(groups, draw, per_epoch, size, generator) for _ in range(n_epochs)]
    used = numpy.unique(numpy.concatenate([order[: per_epoch * size] for order in orders])[: total * size])
    used_texts, used_contexts = [texts[pick[i]] for i in used], [contexts[pick[i]] for i in used]
    precision = resolve_precision(settings.train_precision, runtime.device.type)
    with autocast(runtime.device.type, precision):
        states = runtime.bottom(used_texts, used_contexts)
    cached: List[Any] = [None] * len(pick)
    first = numpy.zeros(len(pick), dtype="int64")
    for i, state in zip(used.tolist(), states):
        cached[i] = state
    if runtime.vector_pooling == "sentence":
        first[used] = runtime.first_segments(used_texts, used_contexts)

    def epoch_batches(epoch: int):
        order = orders[epoch]
        for start in range(0, per_epoch * size, size):
            yield order[start : start + size]

    def batch_loss(batch):
        with autocast(runtime.device.type, precision):
            logits, pooled = runtime.top([cached[i] for i in batch], rows_context[batch], first[batch])
            embedded = runtime.vector_head(pooled) if metric is not None else None
        loss = loss_fn(logits.float(), torch.as_tensor(target[batch], device=runtime.device))
        if metric is not None:
            loss = loss + vectors.weight * metric(embedded.float(),
                                                  metric_target[torch.as_tensor(batch, device=runtime.device)])
        return loss

    trainable = runtime.trainable()
    heads = list(trainable["head"].parameters())
    if metric is not None:  # the vector head and the loss's own weights (ArcFace, softmax) learn as the head does
        heads += list(trainable["vectors"].parameters()) + list(metric.parameters())
    optimizer = torch.optim.AdamW([
        {"params": list(trainable["top"].parameters()), "lr": settings.learn_rate},
        {"params": heads, "lr": settings.head_learn_rate}], weight_decay=settings.weight_decay)
    warmup = max(1, int(settings.warmup * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, (total - step) / total))
    trainable.train()
    train_loop(trainable, optimizer, scheduler, epoch_batches, batch_loss,
               LoopSettings(epochs=n_epochs, total=total, grad_clip=settings.grad_clip,
                            progress=f"fine-tuning {settings.name}"))
    trainable.eval()
    return runtime, classes


class FinetunedShim(MemberShim):
    """``_model``: the :class:`FinetunedEncoder` once fine-tuned;
    ``cfg``: its classes, context width, vector width and base model (what
    rebuilds it). ``vectors``: the :class:`VectorHead` to train (None: no
    vectors)."""

    def __init__(self, vectors: Optional[VectorHead] = None, precision: str = "auto"):
        super().__init__()
        self.vectors = vectors
        # how it predicts, from the config it is built from; not stored with the
        # weights, so a config override at spacy.load takes effect
        self.precision = precision

    def fit(self, member, X, texts, context, pick, y, labels) -> None:
        classes_of_vectors: List[str] = []
        if self.vectors is not None:
            fine = row_values(X, self.vectors.label_field)
            classes_of_vectors = [str(fine[i]) if fine[i] else str(label) for i, label in zip(pick, y)]
        runtime, classes = fine_tune(member.attrs, X, texts, context, pick, y, self.vectors, classes_of_vectors)
        self.cfg.update({"classes": classes, "n_context": int(context.shape[1]),
                         "model_name": member.attrs["name"], "frozen_layers": member.attrs["frozen_layers"],
                         "max_length": member.attrs["max_length"], "vector_width": runtime.vector_width,
                         "vector_pooling": runtime.vector_pooling,
                         "vector_classes": sorted(set(classes_of_vectors))})
        self._model = runtime

    @property
    def vector_width(self) -> int:
        return int(self.cfg.get("vector_width", 0))

    def predict(self, member, X, texts, context) -> Tuple[numpy.ndarray, List[str]]:
        probs, classes, _ = self.predict_with_vectors(member, X, texts, context)
        return probs, classes

    def predict_with_vectors(self, member, X, texts, context) -> Tuple[numpy.ndarray, List[str], numpy.ndarray]:
        contexts = pair_texts(X, texts, member.attrs["context_chars"], member.attrs["use_sections"])
        probs, vectors = self._model.predict(texts, contexts, context, precision=self.precision)
        return probs, list(self.cfg["classes"]), vectors

    def unfit(self) -> None:
        self._model = None
        self.cfg = {}

    def to_device(self, device_type: str, device_id: int) -> None:
        if self._model is not None:
            self._model.to_device("cpu" if device_type == "cpu" else f"cuda:{device_id}")

    def to_bytes(self) -> bytes:
        """The settings and, once fitted, the whole encoder (``finetuned_io.encoder_state``)."""
        stored = encoder_state(self._model) if self._model is not None else {"tensors": b""}
        return srsly.msgpack_dumps({"cfg": self.cfg, **stored})

    def from_bytes(self, data: bytes) -> "FinetunedShim":
        msg = srsly.msgpack_loads(data)
        self.cfg = dict(msg["cfg"])
        self._model = None
        if msg.get("weights"):
            self._model = encoder_from_state(msg, self.cfg)
        elif msg.get("tensors"):  # stored before the whole encoder was: the top layers only
            self._model = legacy_encoder(msg["tensors"], self.cfg)
        return self

    def copy(self) -> "FinetunedShim":
        return FinetunedShim(self.vectors, self.precision).from_bytes(self.to_bytes())


def finetuned_expert(name: str = FinetunedSettings.name, *, docs: str = "papers", use_sections: bool = True,
                     precision: str = "auto", vectors: Optional[VectorHead] = None, **settings: Any
                     ) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """A member fine-tuned by the member-fitting step (module docstring):
    the top layers of the Hugging Face encoder ``name`` over the sentence
    paired with its heading and neighbours, beside section + position ->
    linear -> softmax; ``settings``: the other fields of
    :class:`FinetunedSettings`. ``docs``: the docs it learns from
    (``members.SCOPES``); ``use_sections``: the heading and the section
    one-hot are read. ``precision``: the number format of prediction
    (:func:`finetuned_encoder.resolve_precision`: "auto" is bfloat16 where
    the device multiplies it in hardware, else float32).
    ``vectors``: a :class:`VectorHead`: the member also gives every
    sentence's vector (``members._member_forward``), from the same pass."""
    recorded = asdict(FinetunedSettings(name=name, **settings))
    resolve_precision(precision)  # an unknown format is an error now, not at the first prediction
    return fitted_member("finetuned_expert", FinetunedShim(vectors, str(precision)), recorded, docs=docs,
                         use_sections=use_sections)
