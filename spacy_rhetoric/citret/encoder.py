"""Sentence encoder of CitRet (§3.1.1): a plain ``transformers`` AutoModel
with mean pooling over the attention mask (what SBERT does), fine-tuned with
the cosine-similarity pair loss ``spacy_rhetoric.CosinePairLoss.v1`` (MSE
between cos(a, b) and the pair's score).

Training follows Appendix C where this CPU allows it (AdamW, learning rate
2e-5, weight decay 0.01, batch size 16; linear warm-up over the first 10% of
steps then linear decay, as sentence-transformers' ``fit`` does); epochs and
a step budget are arguments so that a run can be bounded. Checkpoints (model,
tokenizer, optimizer, scheduler, step) are written every ``checkpoint_every``
steps and a run resumes from the last one: batches are drawn from a seeded
permutation per epoch, so a resumed run sees the same batches as an
uninterrupted one.
"""
import json
import os
import random
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy

from ..util import resolve_hf_model

Pair = Tuple[str, str, float]
CHECKPOINT_STATE = "trainer_state.json"


class SentenceEncoder:
    """Mean-pooled transformer sentence embeddings."""

    def __init__(self, name_or_path: str, *, max_length: int = 128, model=None, tokenizer=None):
        import torch  # noqa: F401
        from transformers import AutoModel, AutoTokenizer

        self.name = str(name_or_path)
        self.max_length = int(max_length)
        if model is None or tokenizer is None:
            path = resolve_hf_model(self.name)
            if path != self.name or Path(path).is_dir():
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
            model = model or AutoModel.from_pretrained(path)
        self.tokenizer = tokenizer
        self.model = model
        self.model.eval()

    @property
    def width(self) -> int:
        return int(self.model.config.hidden_size)

    def forward(self, texts: Sequence[str]):
        """Mean-pooled embeddings ``[N, D]`` (a torch tensor, with gradients
        when the model is in training mode)."""

        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        out = self.model(**batch).last_hidden_state  # [N, T, D]
        mask = batch["attention_mask"].unsqueeze(-1).to(out.dtype)
        return (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> numpy.ndarray:
        """Embeddings ``[N, D]`` float32, inference mode; texts are sorted by
        length into batches to save padding."""
        import torch

        texts = list(texts)
        out = numpy.zeros((len(texts), self.width), dtype="float32")
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        was_training = self.model.training
        self.model.eval()
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                vecs = self.forward([texts[i] for i in idx])
                out[idx] = vecs.float().cpu().numpy()
        if was_training:
            self.model.train()
        return out

    def save(self, path: Union[str, Path]) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(path))
        self.tokenizer.save_pretrained(str(path))
        (path / "encoder.json").write_text(json.dumps({"name": self.name, "max_length": self.max_length}))

    @classmethod
    def load(cls, path: Union[str, Path], *, max_length: Optional[int] = None) -> "SentenceEncoder":
        path = Path(path)
        meta_path = path / "encoder.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        enc = cls(str(path), max_length=max_length or meta.get("max_length", 128))
        enc.name = meta.get("name", str(path))
        return enc


def default_pair_loss():
    """A new ``spacy_rhetoric.CosinePairLoss.v1`` module (spacy_rhetoric.losses)."""
    from spacy.util import registry

    from .. import losses  # noqa: F401  (registers the losses)

    return registry.misc.get("spacy_rhetoric.CosinePairLoss.v1")()


def _batches_for_epoch(n: int, batch_size: int, seed: int, epoch: int) -> List[List[int]]:
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(n))
    rng.shuffle(order)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def finetune(
    encoder: SentenceEncoder,
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
    """Fine-tune ``encoder`` in place on ``(text_a, text_b, score)`` pairs.

    Stops after ``epochs`` passes or ``max_steps`` optimizer steps, whichever
    comes first. With ``checkpoint_dir`` the state is saved every
    ``checkpoint_every`` steps and at the end, and (``resume=True``) a run
    restarts from the saved step. Returns ``{"steps", "epochs", "last_loss",
    "mean_loss", "pairs"}``.
    """
    import torch
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    pairs = list(pairs)
    if not pairs:
        raise ValueError("finetune: no training pairs")
    for i, p in enumerate(pairs):
        if len(p) != 3 or not isinstance(p[0], str) or not isinstance(p[1], str):
            raise ValueError(f"finetune: pair {i} is not (text_a, text_b, score): {p!r}")
    loss_fn = loss if loss is not None else default_pair_loss()
    per_epoch = (len(pairs) + batch_size - 1) // batch_size
    total = per_epoch * epochs
    if max_steps is not None:
        total = min(total, int(max_steps))
    torch.manual_seed(seed)
    model = encoder.model
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name else decay).append(param)
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=learning_rate,
    )
    scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup_ratio * total), max(total, 1))
    step = 0
    losses: List[float] = []
    ckpt = Path(checkpoint_dir) if checkpoint_dir else None
    if ckpt and resume and (ckpt / CHECKPOINT_STATE).exists():
        state = json.loads((ckpt / CHECKPOINT_STATE).read_text())
        from transformers import AutoModel

        loaded = AutoModel.from_pretrained(str(ckpt / "model"))
        model.load_state_dict(loaded.state_dict())
        optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt", weights_only=True))
        scheduler.load_state_dict(torch.load(ckpt / "scheduler.pt", weights_only=True))
        step = int(state["step"])
        losses = list(state.get("losses", []))

    def save_checkpoint() -> None:
        if ckpt is None:
            return
        ckpt.mkdir(parents=True, exist_ok=True)
        encoder.save(ckpt / "model")
        torch.save(optimizer.state_dict(), ckpt / "optimizer.pt")
        torch.save(scheduler.state_dict(), ckpt / "scheduler.pt")
        tmp = ckpt / (CHECKPOINT_STATE + ".tmp")
        tmp.write_text(json.dumps({"step": step, "total": total, "losses": losses, "pairs": len(pairs)}))
        tmp.replace(ckpt / CHECKPOINT_STATE)

    model.train()
    bar = tqdm(total=total, initial=step, disable=not progress, desc="fine-tuning encoder", unit="step")
    done = step
    try:
        for epoch in range(epochs):
            for b, idx in enumerate(_batches_for_epoch(len(pairs), batch_size, seed, epoch)):
                global_index = epoch * per_epoch + b
                if global_index < done:
                    continue  # already trained before the resume
                if step >= total:
                    break
                a = encoder.forward([pairs[i][0] for i in idx])
                bvec = encoder.forward([pairs[i][1] for i in idx])
                target = torch.tensor([float(pairs[i][2]) for i in idx], dtype=a.dtype)
                value = loss_fn(a, bvec, target)
                optimizer.zero_grad()
                value.backward()
                optimizer.step()
                scheduler.step()
                step += 1
                losses.append(float(value.detach()))
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.4f}")
                if ckpt is not None and step % checkpoint_every == 0:
                    save_checkpoint()
                if on_step is not None:
                    on_step(step, losses[-1])
            if step >= total:
                break
    finally:
        bar.close()
        model.eval()
    save_checkpoint()
    return {
        "steps": float(step),
        "epochs": float(step) / per_epoch,
        "last_loss": losses[-1] if losses else float("nan"),
        "mean_loss": float(numpy.mean(losses)) if losses else float("nan"),
        "pairs": float(len(pairs)),
    }
