"""Sentence windows for SENT-MASK pre-training and COSAEMB chunks.

Both objectives read a paper as a list of sentences (already split; the
CL-SciSumm reader and the paper readers give them) and cut it into encoder
inputs made of *whole* sentences.

SENT-MASK (``plan_target_windows``): a paper of ``n`` sentences is cut into
consecutive *cores* of ``targets_per_window`` sentences; the cores partition
``range(n)``, so every sentence is a target exactly once per epoch. Each core
is read inside a window of at most ``window_sents`` sentences that adds the
same number of context sentences on both sides where the paper has them
(shifted at the paper's edges), so consecutive windows overlap and a target
near a core edge still has context on both sides. Each sentence is cut to
``max_sentence_tokens`` word pieces (``pack_window``), so a window holds at
most ``window_sents * max_sentence_tokens + 2`` tokens whatever the paper's
length: memory stays bounded.

COSAEMB's chunks (``plan_chunks``, ``iter_sections``) are in
``ml/section_chunks.py`` (the section encoder component reads them too),
re-exported here.
"""
import json
import logging
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import RhetoricError
from ..ml.section_chunks import Chunk, iter_sections, plan_chunks  # noqa: F401 - re-exported


@dataclass(frozen=True)
class TargetWindow:
    """Sentences ``start:end`` of a paper; ``targets`` (a sub-range) are its
    target sentences."""

    start: int
    end: int
    targets: Tuple[int, int]  # [first, last) sentence index, inside [start, end)

    def target_ids(self) -> range:
        return range(*self.targets)


def plan_target_windows(n_sents: int, window_sents: int = 8, targets_per_window: int = 4) -> List[TargetWindow]:
    """Windows of whole sentences whose target cores partition ``range(n_sents)``
    (see module doc). ``targets_per_window <= window_sents``."""
    if window_sents < 1 or targets_per_window < 1:
        raise RhetoricError("plan_target_windows: window_sents and targets_per_window must be >= 1")
    if targets_per_window > window_sents:
        raise RhetoricError(
            f"plan_target_windows: targets_per_window ({targets_per_window}) > window_sents ({window_sents})"
        )
    out: List[TargetWindow] = []
    context = window_sents - targets_per_window
    for first in range(0, n_sents, targets_per_window):
        last = min(first + targets_per_window, n_sents)
        left = context // 2 + (targets_per_window - (last - first))  # a short last core gets more context
        start = max(0, first - left)
        end = min(n_sents, start + window_sents)
        start = max(0, end - window_sents)
        out.append(TargetWindow(start, end, (first, last)))
    return out


@dataclass
class PackedWindow:
    """Word-piece ids of one window: ``[CLS] s_1 ... s_T [SEP]`` with the
    ``[start, end)`` token span of every sentence."""

    input_ids: List[int]
    spans: List[Tuple[int, int]]


def pack_window(
    sentences: Sequence[Sequence[int]], cls_id: int, sep_id: int, max_sentence_tokens: int
) -> PackedWindow:
    """Concatenate tokenised sentences (each cut to ``max_sentence_tokens``,
    never empty: an empty one is skipped by the caller) between CLS and SEP."""
    ids = [cls_id]
    spans = []
    for sent in sentences:
        piece = list(sent[:max_sentence_tokens])
        spans.append((len(ids), len(ids) + len(piece)))
        ids.extend(piece)
    ids.append(sep_id)
    return PackedWindow(ids, spans)


def count_targets(windows: Sequence[TargetWindow]) -> Dict[int, int]:
    """How often each sentence is a target (1 for each, by construction)."""
    counts: Dict[int, int] = {}
    for w in windows:
        for t in w.target_ids():
            counts[t] = counts.get(t, 0) + 1
    return counts


def adamw_with_warmup(model, learn_rate: float, weight_decay: float, warmup_steps: int, total_steps: int):
    """AdamW and the schedule both pre-training loops use: linear warm-up over
    ``warmup_steps`` (from 1 / warmup_steps), then linear decay to 0 at
    ``total_steps``. Returns ``(optimizer, scheduler)``."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=learn_rate, weight_decay=weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min(1.0, (s + 1) / max(1, warmup_steps)) * max(0.0, 1 - s / max(1, total_steps)),
    )
    return optimizer, scheduler


DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass
class TrainSettings:
    """What both pre-training loops share (SENT-MASK and COSAEMB add their own
    fields): the starting model, AdamW with warm-up and linear decay
    (``adamw_with_warmup``), gradient clipping, length, seed and logging."""

    model: str = DEFAULT_MODEL
    learn_rate: float = 2e-5
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    epochs: int = 1
    max_steps: int = 0  # 0 = no limit (epochs decide)
    seed: int = 0
    log_every: int = 10
    gpu_id: Optional[int] = None  # util.torch_device: None = spaCy's current device, -1 = CPU, N = GPU N
    checkpoint_every: int = 200  # steps between checkpoints in OUTPUT/checkpoint (0 = none)


# Settings that do not change what a run trains (a resumed run may differ in them).
RUN_ONLY_SETTINGS = ("log_every", "gpu_id", "checkpoint_every")


def run_pretraining(*loop: Any, settings: TrainSettings, total: int, output: Union[str, Path],
                    save_model: Callable[[Path], None], logger: logging.Logger, name: str, progress: bool = True,
                    **options: Any):
    """What both pre-training loops run: ``training_loop.train_loop(*loop,
    LoopSettings(...), **options)`` (``loop``: model, optimizer, scheduler, epoch_batches,
    batch_loss; ``options``: e.g. counters, generators) with the settings'
    epochs, gradient clipping and logging (rows logged as ``"<name> {json}"``
    when ``progress``), checkpoints every ``checkpoint_every`` steps in
    ``output/checkpoint`` (rerunning the same command resumes from the last
    one; other settings are refused), then ``save_model(output / "model")``
    and the checkpoint removed. Returns the ``LoopResult``."""
    from ..ml.training_loop import LoopSettings, train_loop

    checkpoint = Path(output) / "checkpoint"
    state = {k: v for k, v in asdict(settings).items() if k not in RUN_ONLY_SETTINGS}
    loop_settings = LoopSettings(epochs=settings.epochs, total=total, grad_clip=settings.grad_clip,
                                 log_every=settings.log_every, checkpoint=checkpoint,
                                 checkpoint_every=settings.checkpoint_every, keep_final=False)
    result = train_loop(
        *loop, loop_settings,
        on_log=(lambda row: logger.warning("%s %s", name, json.dumps(row))) if progress else None,
        state={"settings": state}, **options,
    )
    save_model(Path(output) / "model")
    shutil.rmtree(checkpoint, ignore_errors=True)
    return result
