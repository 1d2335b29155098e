"""Sentence encoder of CitRet (§3.1.1): a sentence-transformers model
(transformer + mean pooling, built by ``spacy_rhetoric.ml.st_models``),
fine-tuned with sentence-transformers' ``CosineSimilarityLoss`` (MSE between
cos(a, b) and the pair's score).

Training follows Appendix C where this CPU allows it (AdamW, learning rate
2e-5, weight decay 0.01, batch size 16; linear warm-up over the first 10% of
steps then linear decay, as sentence-transformers' ``fit`` does); epochs and
a step budget are arguments so that a run can be bounded. The
sentence-transformers trainer is not used: it needs ``datasets`` and
``accelerate``, whose current releases require a ``huggingface_hub`` that the
pinned transformers 4.53.2 does not accept. The loop below is the trainer's
minimum, shared with the pre-training loops (``spacy_rhetoric.ml.training_loop``):
seeded batches, the loss, the optimizer and schedule, and checkpoints
(state dicts read back with ``torch.load(weights_only=True)``, step in JSON)
every ``checkpoint_every`` steps; a run resumes from the last one: batches
are drawn from a seeded permutation per epoch, so a resumed run sees the same
batches as an uninterrupted one.
"""
import json
import random
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy

from ..errors import RhetoricError
from ..io import atomic_write_json
from ..ml.st_models import encode, load_sentence_transformer

Pair = Tuple[str, str, float]
META = "encoder.json"


class CitRetEncoder:
    """The CitRet sentence encoder: a ``SentenceTransformer`` (``.model``)
    giving mean-pooled, unnormalised sentence embeddings."""

    def __init__(self, name_or_path: str, *, max_length: int = 128, model=None, device=None):
        """``device``: where the model runs (None: ``util.torch_device()``,
        the device of spaCy's current ops)."""
        self.name = str(name_or_path)
        self.max_length = int(max_length)
        self.model = model if model is not None else load_sentence_transformer(self.name, max_length=self.max_length,
                                                                               device=device)
        self.model.eval()

    @property
    def width(self) -> int:
        return int(self.model.get_embedding_dimension())

    def forward(self, texts: Sequence[str]):
        """Embeddings ``[N, D]`` as a torch tensor, with gradients when the
        model is in training mode."""
        from sentence_transformers.util import batch_to_device

        features = batch_to_device(self.model.preprocess(list(texts)), self.model.device)
        return self.model(features)["sentence_embedding"]

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> numpy.ndarray:
        """Embeddings ``[N, D]`` float32, inference mode."""
        was_training = self.model.training
        out = encode(self.model, texts, batch_size=batch_size)
        if was_training:
            self.model.train()
        return out

    def save(self, path: Union[str, Path]) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save(str(path))
        atomic_write_json(path / META, {"name": self.name, "max_length": self.max_length})

    @classmethod
    def load(cls, path: Union[str, Path], *, max_length: Optional[int] = None, device=None) -> "CitRetEncoder":
        """An encoder saved by :meth:`save` (or any transformer directory)."""
        path = Path(path)
        meta_path = path / META
        meta = json.loads(meta_path.read_text(encoding="utf8")) if meta_path.exists() else {}
        enc = cls(str(path), max_length=max_length or meta.get("max_length", 128), device=device)
        enc.name = meta.get("name", str(path))
        return enc


def _batches_for_epoch(n: int, batch_size: int, seed: int, epoch: int) -> List[List[int]]:
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(n))
    rng.shuffle(order)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def finetune(
    encoder: CitRetEncoder,
    pairs: Sequence[Pair],
    *,
    loss=None,
    epochs: int = 1,
    batch_size: int = 16,
    learning_rate: float = 2e-5,
    weight_decay: float = 0.01,
    warmup_ratio: float = 0.1,
    max_steps: Optional[int] = None,
    seed: int = 0,
    checkpoint_dir: Optional[Union[str, Path]] = None,
    checkpoint_every: int = 200,
    resume: bool = True,
    progress: bool = True,
    on_step: Optional[Callable[[int, float], None]] = None,
) -> Dict[str, float]:
    """Fine-tune ``encoder`` in place on ``(text_a, text_b, score)`` pairs
    with ``loss`` (a sentence-transformers loss module called with the two
    texts' features and the scores; default ``CosineSimilarityLoss``).

    Stops after ``epochs`` passes or ``max_steps`` optimizer steps, whichever
    comes first. With ``checkpoint_dir`` the state is saved every
    ``checkpoint_every`` steps and at the end, and (``resume=True``) a run
    restarts from the saved step. Returns ``{"steps", "epochs", "last_loss",
    "mean_loss", "pairs"}``.
    """
    import torch
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss
    from sentence_transformers.util import batch_to_device
    from transformers import get_linear_schedule_with_warmup

    from ..ml.training_loop import LoopSettings, train_loop

    pairs = list(pairs)
    if not pairs:
        raise RhetoricError("finetune: no training pairs")
    for i, p in enumerate(pairs):
        if len(p) != 3 or not isinstance(p[0], str) or not isinstance(p[1], str):
            raise RhetoricError(f"finetune: pair {i} is not (text_a, text_b, score): {p!r}")
    per_epoch = (len(pairs) + batch_size - 1) // batch_size
    total = per_epoch * epochs
    if max_steps is not None:
        total = min(total, int(max_steps))
    torch.manual_seed(seed)
    model = encoder.model
    loss_fn = loss if loss is not None else CosineSimilarityLoss(model)
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name else decay).append(param)
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=learning_rate,
    )
    scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup_ratio * total), max(total, 1))

    def batch_loss(idx: List[int]):
        features = [batch_to_device(model.preprocess([pairs[i][k] for i in idx]), model.device) for k in (0, 1)]
        target = torch.tensor([float(pairs[i][2]) for i in idx], device=model.device)
        return loss_fn(features, target)

    model.train()
    try:
        result = train_loop(
            model, optimizer, scheduler, lambda epoch: _batches_for_epoch(len(pairs), batch_size, seed, epoch),
            batch_loss, LoopSettings(epochs=epochs, total=total, progress="fine-tuning encoder" if progress else None,
                                     checkpoint=Path(checkpoint_dir) if checkpoint_dir else None,
                                     checkpoint_every=checkpoint_every, resume=resume),
            state={"pairs": len(pairs)}, on_step=on_step,
        )
    finally:
        model.eval()
    losses = result.losses
    return {
        "steps": float(result.steps),
        "epochs": float(result.steps) / per_epoch,
        "last_loss": losses[-1] if losses else float("nan"),
        "mean_loss": float(numpy.mean(losses)) if losses else float("nan"),
        "pairs": float(len(pairs)),
    }
