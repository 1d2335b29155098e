"""A spacy-transformers ``TransformerModel`` whose inference runs the windows
of a batch in slices, so one long document does not need memory for all of
its windows' activations at once.

spacy-transformers' ``Transformer`` pipe batches *documents*
(``max_batch_items``); all span windows of one Doc (``strided_spans``: 128
word pieces, stride 96) then go through the transformer in a single forward
call. Attention and feed-forward activations of that call grow with the
document. Here, outside training, the tokenized
windows are cut into slices of at most ``max_windows_per_pass`` rows, each
slice runs on its own, and the outputs are concatenated: the result is the
same ``FullTransformerBatch`` (same padding, same alignment), so listeners
and ``doc._.trf_data`` do not change. What still grows with the document is
the output itself (one vector per word piece, as in any pipeline that keeps
token vectors); the transient part is bounded by the slice size.

Training is unchanged (the upstream forward with its backprop): training
documents are batches of ordinary size.

Registered as ``spacy_rhetoric.ChunkedTransformerModel.v1``, with the
arguments of ``spacy-transformers.TransformerModel.v3`` plus
``max_windows_per_pass`` (0 = no slicing, i.e. upstream behaviour). The
weights and the serialized form are those of ``TransformerModel``. The
transformer, its config and its tokenizer are loaded with
``trust_remote_code=False`` (``ml.hf_safe``), from a name as from a saved
pipeline: no code from a model folder ever runs.
"""
from typing import Callable, Dict, List, Sequence, Tuple

import torch
from spacy.tokens import Doc
from spacy.util import registry
from spacy_transformers.align import get_alignment, get_alignment_via_offset_mapping
from spacy_transformers.data_classes import FullTransformerBatch, WordpieceBatch
from spacy_transformers.layers import split_trf_batch, trfs2arrays
from spacy_transformers.layers._util import replace_listener_cfg
from spacy_transformers.layers.transformer_model import TransformerModel, huggingface_tokenize
from spacy_transformers.layers.transformer_model import forward as transformer_forward
from spacy_transformers.truncate import truncate_oversize_splits
from thinc.api import Model, chain
from transformers.file_utils import ModelOutput

from ..errors import RhetoricError
from .hf_safe import NO_REMOTE_CODE, NoRemoteCode, no_remote_code

DEFAULT_MAX_WINDOWS = 32


@registry.architectures("spacy_rhetoric.ChunkedTransformerModel.v1")
class ChunkedTransformerModel(TransformerModel):
    """``spacy-transformers.TransformerModel.v3`` whose inference runs at most
    ``max_windows_per_pass`` span windows through the transformer at a time
    (0: all at once, as upstream). Registered as the architecture itself."""

    # The dict defaults mirror spacy-transformers' TransformerModel signature
    # (never mutated here; config resolution passes fresh dicts).
    def __init__(
        self,
        name: str,
        get_spans: Callable,
        tokenizer_config: dict = {},  # noqa: B006
        transformer_config: dict = {},  # noqa: B006
        mixed_precision: bool = False,
        grad_scaler_config: dict = {},  # noqa: B006
        max_windows_per_pass: int = DEFAULT_MAX_WINDOWS,
    ):
        super().__init__(
            name,
            get_spans,
            tokenizer_config={**tokenizer_config, **NO_REMOTE_CODE},
            transformer_config={**transformer_config, **NO_REMOTE_CODE},
            mixed_precision=mixed_precision,
            grad_scaler_config=grad_scaler_config,
        )
        no_remote_code_shims(self)
        self.init = no_remote_code_init
        if max_windows_per_pass < 0:
            raise RhetoricError(f"max_windows_per_pass must be >= 0, got {max_windows_per_pass}")
        self._func = chunked_forward
        self.attrs["max_windows_per_pass"] = int(max_windows_per_pass)
        # nlp.replace_listeners writes the copied layer's config with this
        self.attrs["replace_listener_cfg"] = chunked_replace_listener_cfg

    def copy(self) -> "TransformerModel":
        copied = super().copy()
        copied._func = chunked_forward
        copied.init = no_remote_code_init
        copied.attrs["max_windows_per_pass"] = self.attrs["max_windows_per_pass"]
        return copied


@registry.architectures("spacy_rhetoric.ChunkedTok2VecTransformer.v1")
def chunked_tok2vec_transformer(
    name: str,
    get_spans: Callable,
    tokenizer_config: dict,
    pooling: Model,
    grad_factor: float = 1.0,
    transformer_config: dict = {},  # noqa: B006
    mixed_precision: bool = False,
    grad_scaler_config: dict = {},  # noqa: B006
    max_windows_per_pass: int = DEFAULT_MAX_WINDOWS,
) -> Model:
    """``spacy-transformers.Tok2VecTransformer.v3`` (a component's own
    transformer, same layer structure) built on ``ChunkedTransformerModel``:
    what a ``TransformerListener`` of a ``ChunkedTransformerModel`` becomes
    after ``nlp.replace_listeners`` (e.g. when a component is sourced into
    another pipeline)."""
    transformer = ChunkedTransformerModel(
        name, get_spans, tokenizer_config=tokenizer_config, transformer_config=transformer_config,
        mixed_precision=mixed_precision, grad_scaler_config=grad_scaler_config,
        max_windows_per_pass=max_windows_per_pass,
    )
    return chain(chain(transformer, split_trf_batch()), trfs2arrays(pooling, grad_factor))


def no_remote_code_init(model: Model, X=None, Y=None) -> None:
    """spacy-transformers' ``init`` (the transformer loaded by name), a
    folder that asks to run its own code refused in one line (``ml.hf_safe``)."""
    from spacy_transformers.layers.transformer_model import init

    with no_remote_code(model.attrs["name"]):
        init(model, X=X, Y=Y)


def no_remote_code_shims(model: Model) -> None:
    """Every ``HFShim`` of ``model`` loads its config, transformer and
    tokenizer with ``trust_remote_code=False`` (a saved pipeline is read
    through them, ``HFShim.from_bytes``)."""
    for layer in model.walk():
        for shim in layer.shims:
            for attr in ("config_cls", "model_cls", "tokenizer_cls"):
                cls = getattr(shim, attr, None)
                if cls is not None and not isinstance(cls, NoRemoteCode):
                    setattr(shim, attr, NoRemoteCode(cls))


def chunked_replace_listener_cfg(tok2vec_model_cfg: dict, listener_model_cfg: dict) -> dict:
    """spacy-transformers' ``replace_listener_cfg``, with
    ``ChunkedTok2VecTransformer.v1`` for a ``ChunkedTransformerModel`` (the
    upstream one would give ``Tok2VecTransformer.v3`` an unknown
    ``max_windows_per_pass``)."""
    result = replace_listener_cfg(tok2vec_model_cfg, listener_model_cfg)
    if result.get("@architectures") == "spacy-transformers.Tok2VecTransformer.v3" and "max_windows_per_pass" in result:
        result["@architectures"] = "spacy_rhetoric.ChunkedTok2VecTransformer.v1"
    return result


def _concat_outputs(outputs: List[ModelOutput]) -> ModelOutput:
    """Concatenate per-slice transformer outputs along the window axis."""
    first = outputs[0]
    merged: Dict = {}
    for key in first.keys():
        values = [out[key] for out in outputs]
        if isinstance(values[0], torch.Tensor):
            merged[key] = torch.cat(values, dim=0)
        elif isinstance(values[0], (tuple, list)):
            merged[key] = tuple(torch.cat(parts, dim=0) for parts in zip(*values))
        else:
            raise TypeError(f"Cannot concatenate transformer output field {key!r} of type {type(values[0])}")
    return type(first)(**merged)


def chunked_forward(
    model: TransformerModel, docs: List[Doc], is_train: bool
) -> Tuple[FullTransformerBatch, Callable]:
    max_windows = model.attrs.get("max_windows_per_pass", 0)
    if is_train or not max_windows:
        return transformer_forward(model, docs, is_train)
    tokenizer = model.tokenizer
    transformer = model.layers[0]
    nested_spans = model.attrs["get_spans"](docs)
    flat_spans = [span for doc_spans in nested_spans for span in doc_spans]
    batch_encoding = huggingface_tokenize(tokenizer, [span.text for span in flat_spans])
    wordpieces = WordpieceBatch.from_batch_encoding(batch_encoding)
    if "offset_mapping" in batch_encoding:
        align = get_alignment_via_offset_mapping(flat_spans, batch_encoding["offset_mapping"])
    else:
        align = get_alignment(flat_spans, wordpieces.strings, tokenizer.all_special_tokens)
    wordpieces, align = truncate_oversize_splits(wordpieces, align, tokenizer.model_max_length)
    n = len(wordpieces)
    if n <= max_windows:
        model_output = transformer.predict(wordpieces)
    else:
        parts = [transformer.predict(wordpieces[i : i + max_windows]) for i in range(0, n, max_windows)]
        model_output = _concat_outputs(parts)
    output = FullTransformerBatch(
        spans=nested_spans, wordpieces=wordpieces, model_output=model_output, align=align
    )

    def backprop(d_output: FullTransformerBatch) -> List[Doc]:
        raise ValueError("ChunkedTransformerModel: no backprop outside training (is_train=False)")

    return output, backprop


@registry.callbacks("spacy_rhetoric.initialize_frozen.v1")
def make_initialize_frozen(components: Sequence[str] = ("transformer",)) -> Callable:
    """An ``[initialize.before_init]`` callback that initializes the named
    components although they are in ``training.frozen_components``.

    ``spacy train`` initializes only the components it will update, so a
    transformer that is frozen from the start (a fixed feature extractor, as
    in benchmarks/common/configs/classifier_sections_minilm_cpu.cfg) would never load its pretrained
    weights; spaCy's own answer is to source it from a trained pipeline, which
    needs a second pipeline on disk. ``Transformer.initialize`` needs no
    examples (it loads the weights), so it is called here with none. It links
    its listeners only when it is among the enabled pipes, which a frozen
    component is not during ``nlp.initialize``: the listeners are linked here
    (``find_listeners``, which also gives them the transformer's width).
    Components that are not in the pipeline are an error."""
    names = list(components)

    def initialize_frozen(nlp):
        missing = [name for name in names if name not in nlp.component_names]
        if missing:
            raise RhetoricError(f"initialize_frozen: no component {missing} in the pipeline {nlp.component_names}")
        for name in names:
            pipe = nlp.get_pipe(name)
            pipe.initialize(lambda: [], nlp=nlp)
            if hasattr(pipe, "find_listeners"):
                for _, other in nlp.components:
                    pipe.find_listeners(other)
        return nlp

    return initialize_frozen
