"""One training loop for the project's hand-written torch trainers: CitRet's
encoder fine-tuning (``citret.encoder.finetune``), SENT-MASK
(``pretrain.sentmask``) and COSAEMB (``pretrain.cosaemb``) pre-training.

spaCy's trainer trains thinc pipelines, and sentence-transformers' trainer
needs ``datasets`` and ``accelerate`` releases that the pinned transformers
4.53.2 does not accept, so this is the trainers' minimum: the caller's
batches (drawn from its seeded generators, one epoch at a time) and loss;
zero_grad, backward, optional gradient clipping, optimizer and schedule
steps; a progress bar and logged rows of windowed mean losses; checkpoints
and resume.

The loop's settings are one :class:`LoopSettings`; what the caller's code
gives (state to match on resume, generators, counters, callbacks) are
keywords of :func:`train_loop`.

Checkpoints (``checkpoint`` directory, every ``checkpoint_every`` steps):
the state dicts of the model, optimizer and schedule and the torch random
states (global and the caller's generators) written with ``torch.save`` and
read back with ``torch.load(weights_only=True)``, and the step, losses and
logged rows in ``trainer_state.json`` (each file written to a temporary file
and renamed). A rerun with the same arguments resumes: the batches of the
steps already done are drawn again (so the caller's generators are where
they were) but not trained on, so a resumed run trains on the same batches
as an uninterrupted one. A checkpoint written by another run (its
``state`` differs) is refused.
"""
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from ..errors import RhetoricError
from ..io import atomic_path, atomic_write_json

CHECKPOINT_STATE = "trainer_state.json"
STATE_FILES = ("model.pt", "optimizer.pt", "scheduler.pt", "random.pt")


class CheckpointError(RhetoricError):
    """A checkpoint that this run cannot resume from."""


@dataclass(frozen=True)
class LoopSettings:
    """How :func:`train_loop` runs: ``epochs`` passes or ``total`` optimizer
    steps, whichever comes first; ``grad_clip`` (> 0: the gradients' norm
    clipped to it); ``log_every`` (a logged row every that many steps and at
    the last; 0: none); ``progress`` (the description of a tqdm bar; None:
    no bar); ``checkpoint`` (a directory written every ``checkpoint_every``
    steps and, with ``keep_final``, at the end; with ``resume`` a run
    restarts from it)."""

    epochs: int
    total: int
    grad_clip: float = 0.0
    log_every: int = 0
    progress: Optional[str] = None
    checkpoint: Optional[Path] = None
    checkpoint_every: int = 0
    keep_final: bool = True
    resume: bool = True


@dataclass
class LoopResult:
    steps: int
    losses: List[float] = field(default_factory=list)  # one per step (those before a resume included)
    history: List[Dict[str, Any]] = field(default_factory=list)  # the logged rows
    counts: Dict[str, int] = field(default_factory=dict)  # the ``counters``' sums
    seconds: float = 0.0


def _save(checkpoint: Path, model, optimizer, scheduler, generators: Sequence[Any], meta: Dict[str, Any]) -> None:
    import torch

    checkpoint.mkdir(parents=True, exist_ok=True)
    rng = {"torch": torch.get_rng_state(), **{f"generator{i}": g.get_state() for i, g in enumerate(generators)}}
    for name, value in zip(STATE_FILES, (model.state_dict(), optimizer.state_dict(), scheduler.state_dict(), rng)):
        with atomic_path(checkpoint / name) as tmp:
            torch.save(value, tmp)
    atomic_write_json(checkpoint / CHECKPOINT_STATE, meta)  # last: the marker of a complete checkpoint


def _load(checkpoint: Path, model, optimizer, scheduler, generators: Sequence[Any],
          state: Dict[str, Any]) -> Dict[str, Any]:
    import torch

    meta = json.loads((checkpoint / CHECKPOINT_STATE).read_text(encoding="utf8"))
    if meta.get("state") != json.loads(json.dumps(state)):
        raise CheckpointError(f"{checkpoint} holds the checkpoint of another run (other settings or data); "
                              "remove it or write to another directory")
    model_state, optimizer_state, scheduler_state, rng = (
        torch.load(checkpoint / name, weights_only=True, map_location="cpu") for name in STATE_FILES)
    model.load_state_dict(model_state)
    optimizer.load_state_dict(optimizer_state)
    scheduler.load_state_dict(scheduler_state)
    torch.set_rng_state(rng["torch"])
    for i, generator in enumerate(generators):
        generator.set_state(rng[f"generator{i}"])
    return meta


def train_loop(
    model,
    optimizer,
    scheduler,
    epoch_batches: Callable[[int], Iterable[Any]],
    batch_loss: Callable[[Any], Any],
    settings: Optional[LoopSettings] = None,
    *,
    state: Optional[Dict[str, Any]] = None,
    generators: Sequence[Any] = (),
    counters: Optional[Dict[str, Callable[[Any], int]]] = None,
    on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
    on_step: Optional[Callable[[int, float], None]] = None,
    **fields: Any,
) -> LoopResult:
    """Train ``model`` as ``settings`` (:class:`LoopSettings`) says over
    ``epoch_batches(epoch)``; ``batch_loss(batch)`` gives a batch's loss
    tensor. A logged row (step, epoch, mean loss since the last row, the
    ``counters``' running sums, seconds) is passed to ``on_log``. On resume
    from a checkpoint, ``state`` (JSON values, e.g. the settings) must match
    and ``generators`` (the torch generators the loss draws from) are saved
    and restored. ``on_step(step, loss)`` after every step (tests interrupt
    a run with it). ``fields``: the fields of a :class:`LoopSettings` given
    one by one instead of ``settings`` (as ``ml/finetuned.py`` calls it).
    The caller seeds its generators and puts the model in training mode."""
    if settings is None:
        settings = LoopSettings(**fields)
    elif fields:
        raise TypeError(f"train_loop: settings given twice ({', '.join(sorted(fields))} beside a LoopSettings)")
    epochs, total, grad_clip, log_every = settings.epochs, settings.total, settings.grad_clip, settings.log_every
    checkpoint, checkpoint_every = settings.checkpoint, settings.checkpoint_every
    import torch
    from tqdm import tqdm

    state = dict(state or {})
    counters = counters or {}
    result = LoopResult(steps=0, counts={name: 0 for name in counters})
    if checkpoint is not None and settings.resume and (checkpoint / CHECKPOINT_STATE).exists():
        meta = _load(checkpoint, model, optimizer, scheduler, generators, state)
        result.steps, result.losses, result.history = int(meta["step"]), list(meta["losses"]), list(meta["history"])
        result.counts.update(meta.get("counts", {}))

    def save() -> None:
        _save(checkpoint, model, optimizer, scheduler, generators,
              {"step": result.steps, "total": total, "losses": result.losses, "history": result.history,
               "counts": result.counts, "state": state})

    done, seen = result.steps, 0
    window: List[float] = []
    start = time.time()
    bar = tqdm(total=total, initial=done, disable=settings.progress is None, desc=settings.progress, unit="step")
    try:
        for epoch in range(epochs):
            for batch in epoch_batches(epoch):
                seen += 1
                if seen <= done:
                    continue  # trained before the resume
                if result.steps >= total:
                    break
                loss = batch_loss(batch)
                optimizer.zero_grad()
                loss.backward()
                if grad_clip > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
                optimizer.step()
                scheduler.step()
                result.steps += 1
                value = float(loss.detach())
                result.losses.append(value)
                window.append(value)
                for name, count in counters.items():
                    result.counts[name] += count(batch)
                bar.update(1)
                bar.set_postfix(loss=f"{value:.4f}")
                if log_every and (result.steps % log_every == 0 or result.steps == total):
                    row = {"step": result.steps, "epoch": epoch, "loss": sum(window) / len(window),
                           **result.counts, "seconds": round(time.time() - start, 1)}
                    result.history.append(row)
                    window = []
                    if on_log is not None:
                        on_log(row)
                if checkpoint is not None and checkpoint_every and result.steps % checkpoint_every == 0:
                    save()
                if on_step is not None:
                    on_step(result.steps, value)
            if result.steps >= total:
                break
    finally:
        bar.close()
    if checkpoint is not None and settings.keep_final:
        save()
    result.seconds = time.time() - start
    return result
