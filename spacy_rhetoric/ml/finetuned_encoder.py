"""The torch side of the fine-tuned member (``ml/finetuned.py``): the
Hugging Face encoder (all-MiniLM-L6-v2 by default), its tokenizer, the
linear layer of the labels and the optional vector head, on one torch
device. Training runs the frozen bottom layers once per sentence
(:meth:`FinetunedEncoder.bottom`, a cache) and the top ones per batch
(:meth:`FinetunedEncoder.top`); prediction runs every layer in one pass
(:meth:`FinetunedEncoder.predict`). How it is stored inside a pipeline:
``ml/finetuned_io.py``.
"""
from typing import Any, List, Optional, Sequence, Tuple

import numpy

from ..errors import RhetoricError

POOLINGS = ("pair", "sentence")  # what the vector head averages (VectorHead.pooling)
# the number formats prediction runs in (FinetunedMember.v1 ``precision``); "auto": resolve_precision
PRECISIONS = ("auto", "fp32", "bf16", "int8")


def native_bf16(device_type: str = "cpu") -> bool:
    """Whether the device multiplies bfloat16 matrices in hardware: on a CPU,
    AMX tiles or AVX-512 BF16 (where bfloat16 autocast is faster than
    float32; elsewhere it is emulated and slower); a CUDA card of compute
    capability 8.0 or more."""
    import torch

    if device_type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    checks = [getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
    try:
        return any(bool(check()) for check in checks if check is not None)
    except Exception:  # a torch build without the probes: take the safe path
        return False


def resolve_precision(precision: str, device_type: str = "cpu") -> str:
    """The number format prediction runs in: ``"auto"`` is bfloat16 where
    the device has it in hardware (:func:`native_bf16`), else float32;
    ``"int8"`` applies on a CPU only (float32 elsewhere)."""
    if precision not in PRECISIONS:
        raise RhetoricError(f"precision is one of {list(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        return "bf16" if native_bf16(device_type) else "fp32"
    if precision == "int8" and device_type != "cpu":
        return "fp32"
    return precision


def autocast(device_type: str, precision: str):
    """bfloat16 autocast on ``device_type`` for ``"bf16"``; else a no-op."""
    import contextlib

    import torch

    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(device_type if device_type in ("cpu", "cuda") else "cpu", dtype=torch.bfloat16)


class FinetunedEncoder:
    """The base encoder, its tokenizer and the trained linear layer, on one
    torch device; the bottom layers are run apart from the top ones.
    ``parts``: the ``(encoder, tokenizer)`` to use (a stored member's,
    ``ml/finetuned_io.py``); without them both are loaded from
    ``model_name`` (``util.resolve_hf_model``: the installed package, offline)."""

    def __init__(self, model_name: str, frozen_layers: int, n_context: int, n_labels: int, max_length: int,
                 vector_width: int = 0, vector_pooling: str = "pair", *, parts: Optional[Tuple[Any, Any]] = None):
        import torch

        from ..util import torch_device

        if parts is None:
            from transformers import AutoModel, AutoTokenizer

            from ..util import resolve_hf_model
            from .hf_safe import no_remote_code

            path = resolve_hf_model(model_name)
            with no_remote_code(path):
                parts = (AutoModel.from_pretrained(path, trust_remote_code=False),
                         AutoTokenizer.from_pretrained(path, trust_remote_code=False))
        self.model_name = str(model_name)
        self.encoder, self.tokenizer = parts
        layers = self.encoder.encoder.layer
        if not 0 <= int(frozen_layers) < len(layers):
            raise RhetoricError(f"frozen_layers must be in 0..{len(layers) - 1} for {model_name} "
                                f"({len(layers)} layers), got {frozen_layers}")
        self.frozen = int(frozen_layers)
        self._int8 = None
        self.max_length = int(max_length)
        width = self.encoder.config.hidden_size
        self.head = torch.nn.Linear(width + n_context, n_labels)
        # the vector head: the pooled trunk -> ``vector_width`` (none: 0)
        self.vector_head = torch.nn.Linear(width, int(vector_width)) if vector_width else None
        if vector_pooling not in POOLINGS:
            raise RhetoricError(f"vector pooling is one of {POOLINGS}, got {vector_pooling!r}")
        self.vector_pooling = vector_pooling
        self.device = torch_device()
        self.encoder.to(self.device).eval()
        self.head.to(self.device)
        if self.vector_head is not None:
            self.vector_head.to(self.device)
        for param in self.encoder.parameters():
            param.requires_grad = False
        for param in self.trainable().parameters():
            param.requires_grad = True

    def to_device(self, device) -> None:
        """Move the encoder and the linear layer to the torch ``device``."""
        import torch

        self.device = torch.device(device)
        self._int8 = None
        self.encoder.to(self.device)
        self.head.to(self.device)
        if self.vector_head is not None:
            self.vector_head.to(self.device)

    def trainable(self):
        """The modules that learn: the top layers, the linear layer and the
        vector head (if any)."""
        import torch

        modules = {"top": torch.nn.ModuleList(self.encoder.encoder.layer[self.frozen:]), "head": self.head}
        if self.vector_head is not None:
            modules["vectors"] = self.vector_head
        return torch.nn.ModuleDict(modules)

    def first_segments(self, texts: Sequence[str], contexts: Sequence[str]) -> numpy.ndarray:
        """Per pair, the word pieces of its first segment (the sentence, with
        the opening and the separating special tokens) as the pair is truncated."""
        x = self.tokenizer(list(texts), list(contexts), truncation=True, max_length=self.max_length,
                           return_token_type_ids=True)
        return numpy.asarray([sum(1 for t in row if t == 0) for row in x["token_type_ids"]], dtype="int64")

    def lengths(self, texts: Sequence[str], contexts: Sequence[str]) -> numpy.ndarray:
        """Per pair, its number of word pieces (truncated to ``max_length``)."""
        ids = self.tokenizer(list(texts), list(contexts), truncation=True, max_length=self.max_length)["input_ids"]
        return numpy.asarray([len(row) for row in ids], dtype="int64")

    def bottom(self, texts: Sequence[str], contexts: Sequence[str], batch_size: int = 64) -> List[Any]:
        """Per pair, the hidden states after the frozen layers over its word
        pieces (``[length, width]``, float16 on the CPU: a cache). The pairs
        are run in batches of similar length (fewer padded positions to
        compute); each pair's states do not depend on its batch."""
        import torch

        out: List[Any] = [None] * len(texts)
        order = numpy.argsort(self.lengths(texts, contexts), kind="stable")
        with torch.no_grad():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size].tolist()
                x = self.tokenizer([texts[i] for i in rows], [contexts[i] for i in rows],
                                   truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
                x = {k: v.to(self.device) for k, v in x.items()}
                hidden = self.encoder.embeddings(input_ids=x["input_ids"], token_type_ids=x.get("token_type_ids"))
                mask = self._mask(x["attention_mask"])
                for layer in self.encoder.encoder.layer[: self.frozen]:
                    hidden = layer(hidden, attention_mask=mask)[0]
                lengths = x["attention_mask"].sum(1).tolist()
                for j, (i, n) in enumerate(zip(rows, lengths)):
                    out[i] = hidden[j, : int(n)].to("cpu", torch.float16)
        return out

    def _mask(self, attention_mask):
        return self.encoder.get_extended_attention_mask(attention_mask, attention_mask.shape)

    def top(self, cached: Sequence[Any], context, first: Optional[Sequence[int]] = None):
        """Logits of a batch and the states its vector head reads: the cached
        bottom states through the top layers, mean-pooled; the logits read
        the pooled states beside ``context`` (``[n, n_context]``); the vector
        head the same, or with ``vector_pooling = "sentence"`` the mean over
        each pair's ``first`` word pieces (:meth:`first_segments`)."""
        import torch

        length = max(int(c.shape[0]) for c in cached)
        hidden = torch.zeros(len(cached), length, cached[0].shape[1], device=self.device)
        mask = torch.zeros(len(cached), length, dtype=torch.long, device=self.device)
        for i, c in enumerate(cached):
            hidden[i, : c.shape[0]] = c.to(self.device, torch.float32)
            mask[i, : c.shape[0]] = 1
        extended = self._mask(mask)
        for layer in self.encoder.encoder.layer[self.frozen:]:
            hidden = layer(hidden, attention_mask=extended)[0]
        m = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
        context = torch.as_tensor(context, dtype=pooled.dtype, device=self.device)
        if self.vector_pooling == "sentence":
            if first is None:
                raise RhetoricError("sentence pooling needs each pair's first segment (first_segments)")
            within = torch.arange(length, device=self.device).unsqueeze(0) < torch.as_tensor(
                list(first), device=self.device).unsqueeze(1)
            return self.head(torch.cat([pooled, context], 1)), self._mean(hidden, mask * within)
        return self.head(torch.cat([pooled, context], 1)), pooled

    @staticmethod
    def _mean(hidden, mask):
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)

    def inference_encoder(self, precision: str = "fp32"):
        """The encoder prediction runs: with ``precision = "int8"`` on a CPU,
        a copy whose linear layers are dynamically quantized to int8 (torch's
        ``quantize_dynamic``: int8 weights, activations quantized per batch),
        made once; else the encoder itself (``"bf16"`` runs it under autocast,
        :meth:`predict`)."""
        if precision != "int8" or self.device.type != "cpu":
            return self.encoder
        if getattr(self, "_int8", None) is None:
            import copy
            import warnings

            import torch

            with warnings.catch_warnings():  # torch 2.10+ points to torchao for new code; this API still works
                warnings.simplefilter("ignore", UserWarning)
                warnings.simplefilter("ignore", DeprecationWarning)
                self._int8 = torch.ao.quantization.quantize_dynamic(copy.deepcopy(self.encoder), {torch.nn.Linear},
                                                                    dtype=torch.qint8)
        return self._int8

    @property
    def vector_width(self) -> int:
        return int(self.vector_head.out_features) if self.vector_head is not None else 0

    def predict(self, texts, contexts, context, batch_size: int = 64, precision: str = "fp32"
                ) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """Probabilities per pair and, with a vector head, its vector
        (``[n, vector_width]``, L2-normalised; else ``[n, 0]``): every layer
        in one pass per batch (no cache of the frozen layers' states at
        prediction), batches of pairs of similar length (each pair's result
        does not depend on its batch). ``precision`` (:func:`resolve_precision`):
        ``"bf16"`` runs the encoder's layers under bfloat16 autocast (pooling
        and heads stay float32), ``"int8"`` on a CPU its linear layers in int8
        (:meth:`inference_encoder`), ``"fp32"`` plain float32."""
        import torch

        precision = resolve_precision(precision, self.device.type)
        encoder = self.inference_encoder(precision)
        encoder.eval()
        out = numpy.zeros((len(texts), self.head.out_features), dtype="float32")
        vectors = numpy.zeros((len(texts), self.vector_width), dtype="float32")
        order = numpy.argsort(self.lengths(texts, contexts), kind="stable")
        with torch.no_grad():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                x = self.tokenizer([texts[i] for i in rows], [contexts[i] for i in rows], truncation=True,
                                   max_length=self.max_length, padding=True, return_tensors="pt",
                                   return_token_type_ids=True)
                x = {k: v.to(self.device) for k, v in x.items()}
                with autocast(self.device.type, precision):
                    hidden = encoder.embeddings(input_ids=x["input_ids"], token_type_ids=x.get("token_type_ids"))
                    mask = self._mask(x["attention_mask"])
                    for layer in encoder.encoder.layer:
                        hidden = layer(hidden, attention_mask=mask)[0]
                hidden = hidden.float()
                m = x["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
                features = torch.cat([pooled, torch.as_tensor(context[rows], dtype=pooled.dtype, device=self.device)], 1)
                out[rows] = torch.softmax(self.head(features), -1).to("cpu", torch.float32).numpy()
                if self.vector_head is not None:
                    if self.vector_pooling == "sentence":
                        pooled = self._mean(hidden, x["attention_mask"] * (x["token_type_ids"] == 0))
                    vec = torch.nn.functional.normalize(self.vector_head(pooled), dim=-1)
                    vectors[rows] = vec.to("cpu", torch.float32).numpy()
        return out, vectors
