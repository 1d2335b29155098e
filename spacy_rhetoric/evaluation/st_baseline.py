"""The sentence-transformers baseline the vector benchmarks compare against:
all-MiniLM-L6-v2 (the local copy, ``util.resolve_hf_model``; loaded by
``ml.st_models``: mean pooling, 256 tokens), its L2-normalised vectors, and
the same model fine-tuned with sentence-transformers' ``BatchAllTripletLoss``
(their module, default margin and distance) for exactly ``steps`` steps of
``batch_size`` sentences drawn P x K (``K_PER_CLASS`` sentences of each of
``P = batch_size / K_PER_CLASS`` classes, ``spacy_rhetoric.pk_batcher.v1``,
seeded), AdamW lr 2e-5, linear warm-up over 10 % of the steps then linear
decay, gradients clipped at norm 1 -- their loss in a plain torch loop (their
Trainer / ``fit`` need ``datasets`` and ``accelerate``)."""
from typing import List, Sequence

import numpy
from spacy.util import registry

from .neighbours import l2_normalize

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MAX_LENGTH = 256  # all-MiniLM-L6-v2's own max_seq_length
K_PER_CLASS = 4
LEARN_RATE, WARMUP, CLIP = 2e-5, 0.1, 1.0


def load_minilm(device=None):
    """A fresh all-MiniLM-L6-v2 (``ml.st_models.load_sentence_transformer``)."""
    from ..ml.st_models import load_sentence_transformer

    return load_sentence_transformer(MODEL, max_length=MAX_LENGTH, device=device)


def encode_normalized(model, texts: Sequence[str], batch_size: int = 64) -> numpy.ndarray:
    """``model``'s L2-normalised vectors of ``texts``."""
    from ..ml.st_models import encode

    return l2_normalize(encode(model, texts, batch_size=batch_size))


def finetune_triplets(model, texts: Sequence[str], classes: Sequence[str], *, steps: int, batch_size: int,
                      seed: int) -> List[float]:
    """Fine-tune ``model`` in place with ``BatchAllTripletLoss`` (module
    docstring); the loss of each step."""
    import torch
    from sentence_transformers.sentence_transformer.losses import BatchAllTripletLoss
    from sentence_transformers.util import batch_to_device
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(seed)
    ids = {c: i for i, c in enumerate(sorted(set(classes)))}
    p = min(batch_size // K_PER_CLASS, len(ids))
    batcher = registry.batchers.get("spacy_rhetoric.pk_batcher.v1")(
        p, K_PER_CLASS, seed=seed, buffer=0, batches_per_chunk=steps, get_label=lambda i: classes[i])
    loss_module = BatchAllTripletLoss(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARN_RATE)
    schedule = get_linear_schedule_with_warmup(optimizer, int(WARMUP * steps), steps)
    model.train()
    losses = []
    for batch in batcher(range(len(texts))):
        features = batch_to_device(model.preprocess([texts[i] for i in batch]), model.device)
        labels = torch.tensor([ids[classes[i]] for i in batch], device=model.device)
        loss = loss_module([features], labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
