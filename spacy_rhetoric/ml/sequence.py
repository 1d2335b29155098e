"""Label-sequence decoding for ``rhetoric_function_classifier``: a linear-chain CRF
over each document's sentences.

``spacy_rhetoric.SequenceSentenceClassifier.v1`` takes ``(docs, indices)`` (see
``pooling.py``) and returns one row of label probabilities per sentence, like
the other classifier architectures, so it drops into the pipe unchanged:

- emissions (unnormalised label scores per sentence) = a dense part, the
  context trunk of ``ContextSentenceClassifier.v1`` (pooled tok2vec or
  transformer vectors -> Maxout -> the ``encoder`` block, window CNN /
  BiLSTM, over the doc's sentences -> + position features) -> Linear, plus a sparse part beside it
  as spaCy's ``TextCatEnsemble`` does: hashed 1..``ngram_size``-grams of the
  sentence's ``LOWER`` strings and hashed position buckets (relative position
  in tenths, index from the start and from the end capped at 5) -> thinc
  ``SparseLinear.v2``;
- a linear-chain CRF over the sentences of each doc: transition scores
  ``W[i, j]`` (label i followed by label j), start and end scores. The forward
  pass runs forward-backward in log space and returns the per-sentence
  marginals ``p(y_t = k | doc)``.

Training. The pipe's loss (``FunctionClassifier._loss``) hands back
``(p - onehot(gold)) / n`` per labelled row, 0 for unlabelled rows, the
gradient thinc's ``Softmax`` reads as d(logits). This layer reads it as the
gradient with respect to the *log*-marginals: for every row,
``sum_k (p_k - y_k) d log p_k = -d log p_y`` because ``sum_k p_k d log p_k =
d sum_k p_k = 0``, so that is exactly the gradient of the marginal
cross-entropy ``-1/n sum_t log p(y_t | doc)``, and it reaches the emissions
and the transition matrix by backprop through forward-backward (a softmax is
the one-sentence special case). Labelled and unlabelled sentences can be
mixed within a doc: unlabelled ones are marginalised out.

Why torch autograd inside a thinc layer (and not ``PyTorchWrapper``, nor numpy
with a hand-written backprop): the gradient of the marginals of
forward-backward is a second pass of sums of pair marginals and easy to get
wrong by hand; torch's autograd gives it from the same log-space recursions
(checked against brute-force enumeration in ``tests/test_sequence.py``). The
parameters stay thinc parameters (``W``, ``start``, ``end``), so the
optimizer, ``to_disk``/``from_bytes`` and ``use_averages`` treat them like any
other layer's, and nothing here owns torch state. Torch runs in float64 on
padded ``[docs, max sentences, labels]`` tensors: the recursions are over the
sentences (tens per abstract), so their cost is small beside the encoder's.
It runs on the CPU whatever the model's device (``spacy train --gpu-id 0``):
one device->host copy of the emissions and parameters and one host->device
copy of the output per forward, the same in backprop. The
sparse part's layers (n-gram hashing, ``SparseLinear``, numpy only) run on the
CPU inside ``ml.devices.with_cpu_chain``, as spaCy's ``with_cpu`` does.

Segments: by default the sequence (CRF chain, position buckets) is the doc.
With ``segments = "sections"`` (``SectionAwareSentenceClassifier.v3``) it is
each run of consecutive sentences with the same section
(``ml.segments.sections_of``): in a full paper the CRF chains the sentences of
one section and a sentence's position buckets count within its section and
are hashed together with the section's name, so each section has its own
position prior (the first sentence of an abstract and of a results section
are different cues); a doc with one section (an abstract) is one segment.

Decoding: ``decode = "marginal"`` (default) outputs the marginals, so the
pipe's argmax is the per-sentence most probable label (what the training
loss targets). ``decode = "viterbi"`` outputs the one-hot rows of each doc's
highest-scoring label sequence at prediction time (the scores are then the
path, not probabilities); training always uses the marginals. ``viterbi_path``
and ``crf_log_marginals`` are the plain functions behind both.
"""
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy
from spacy.attrs import LOWER
from spacy.strings import hash_string
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Dropout, Linear, Model, SparseLinear_v2, chain
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from .assembly import CONTEXT_TRUNK, SEQUENCE_HEAD, architecture, sentence_model
from .classifier import build_context_trunk
from .devices import to_host, with_cpu_chain
from .segments import SEGMENTS, segments_of

DECODES = ("marginal", "viterbi")
N_POSITION_BINS = 10
MAX_POSITION_INDEX = 5


# -- CRF computations (torch autograd) ------------------------------------------


def _pad(emissions, lengths: Sequence[int]):
    """Flat ``[n, K]`` emissions -> padded ``[B, T, K]`` and the ``[B, T]`` mask
    (docs with no sentence left out)."""
    import torch

    lengths = [n for n in lengths if n > 0]
    B, T, K = len(lengths), max(lengths), emissions.shape[1]
    padded = emissions.new_zeros((B, T, K))
    mask = torch.zeros((B, T), dtype=torch.bool)
    start = 0
    for b, n in enumerate(lengths):
        padded[b, :n] = emissions[start : start + n]
        mask[b, :n] = True
        start += n
    return padded, mask


def crf_log_marginals(emissions, transitions, start, end, lengths: Sequence[int]):
    """Log-marginals ``log p(y_t = k | x)`` of a linear-chain CRF, one row per
    sentence (torch tensors in, a ``[n, K]`` tensor out; differentiable).

    Sequence score of labels y_1..y_n: ``start[y_1] + sum_t E[t, y_t] +
    sum_t W[y_t, y_t+1] + end[y_n]``; one chain per entry of ``lengths``
    (consecutive rows of ``emissions``; zero-length chains allowed).
    """
    import torch

    n_rows, K = emissions.shape
    if n_rows == 0:
        return emissions.new_zeros((0, K))
    E, mask = _pad(emissions, lengths)
    B, T, _ = E.shape
    lens = mask.sum(1)
    trans = transitions.unsqueeze(0)  # [1, K, K]
    alphas = [start.unsqueeze(0) + E[:, 0]]
    for t in range(1, T):
        step = torch.logsumexp(alphas[-1].unsqueeze(2) + trans, dim=1) + E[:, t]
        alphas.append(torch.where(mask[:, t : t + 1], step, alphas[-1]))
    log_z = torch.logsumexp(alphas[-1] + end.unsqueeze(0), dim=1)  # [B]
    end_b = end.unsqueeze(0).expand(B, K)
    betas = [end_b]  # beta at position T - 1
    for t in range(T - 2, -1, -1):
        step = torch.logsumexp(trans + (E[:, t + 1] + betas[-1]).unsqueeze(1), dim=2)
        inside = (t + 1 < lens).unsqueeze(1)
        betas.append(torch.where(inside, step, end_b))
    betas.reverse()
    alpha = torch.stack(alphas, 1)
    beta = torch.stack(betas, 1)
    log_marg = alpha + beta - log_z.view(B, 1, 1)
    return log_marg[mask]


def viterbi_path(emissions: numpy.ndarray, transitions: numpy.ndarray, start: numpy.ndarray,
                 end: numpy.ndarray) -> List[int]:
    """Highest-scoring label sequence of one chain (numpy; scores as in
    ``crf_log_marginals``)."""
    n, K = emissions.shape
    if n == 0:
        return []
    score = start + emissions[0]
    back = numpy.zeros((n, K), dtype="i")
    for t in range(1, n):
        cand = score[:, None] + transitions  # [prev, next]
        back[t] = cand.argmax(axis=0)
        score = cand.max(axis=0) + emissions[t]
    best = [int((score + end).argmax())]
    for t in range(n - 1, 0, -1):
        best.append(int(back[t, best[-1]]))
    best.reverse()
    return best


# -- sparse n-gram + position features ----------------------------------------


def position_keys(n: int, tag: str = "") -> List[List[int]]:
    """Hashed position buckets of each of ``n`` sentences (``tag``: appended
    to every key, e.g. the section's name)."""
    keys = []
    suffix = f"|{tag}" if tag else ""
    for i in range(n):
        rel = int(round((i / (n - 1) if n > 1 else 0.0) * (N_POSITION_BINS - 1)))
        from_end = n - 1 - i
        keys.append([
            hash_string(f"__pos_rel={rel}{suffix}"),
            hash_string(f"__pos_start={min(i, MAX_POSITION_INDEX)}{suffix}"),
            hash_string(f"__pos_end={min(from_end, MAX_POSITION_INDEX)}{suffix}"),
        ])
    return keys


def ngram_counts(ops, ids: numpy.ndarray, ngram_size: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The distinct hashed 1..``ngram_size``-grams of the token ids ``ids``
    (uint64, numpy) and their counts: spaCy's ``extract_ngrams`` for one
    sentence."""
    unigrams = numpy.ascontiguousarray(ids)
    grams = [unigrams]
    for size in range(2, ngram_size + 1):
        if len(unigrams) >= size:
            grams.append(numpy.asarray(ops.ngrams(size, unigrams), dtype="uint64"))
    return numpy.unique(numpy.concatenate(grams), return_counts=True)


def sentence_ngrams(ngram_size: int, attr: int = LOWER, segments: str = "docs") -> Model:
    """``(docs, indices)`` -> ``(keys, values, lengths)`` for ``SparseLinear``:
    per sentence, the hashed 1..ngram_size-grams of its tokens' ``attr``
    (spaCy's ``extract_ngrams`` per sentence instead of per doc, counts as
    values) and three hashed position buckets (value 1) within its segment
    (``segments_of``)."""
    if segments not in SEGMENTS:
        raise RhetoricError(f"Unknown segments {segments!r}: use one of {SEGMENTS}")
    return Model("sentence_ngrams", _ngrams_forward,
                 attrs={"ngram_size": ngram_size, "attr": attr, "segments": segments})


def _ngrams_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool):
    docs, indices = X
    ops = model.ops
    xp = numpy
    offsets = to_host(indices.dataXd)  # the indices may still be on the device (with_cpu_chain passes Ragged as is)
    lengths = to_host(indices.lengths).tolist()
    seg_lengths, seg_tags = segments_of(X, model.attrs.get("segments", "docs"))
    positions = [keys for n, tag in zip(seg_lengths, seg_tags) for keys in position_keys(n, tag)]
    batch_keys, batch_vals, out_lengths = [], [], []
    row = 0
    for doc, n in zip(docs, lengths):
        ids = doc.to_array([model.attrs["attr"]]).astype("uint64").reshape(-1)
        pos_keys = positions[row: row + n]
        for i in range(n):
            start, end = int(offsets[row, 0]), int(offsets[row, 1])
            row += 1
            keys, vals = ngram_counts(ops, ids[start:end], model.attrs["ngram_size"])
            keys = xp.concatenate([keys, xp.asarray(pos_keys[i], dtype="uint64")])
            vals = xp.concatenate([vals.astype("f"), xp.ones((len(pos_keys[i]),), dtype="f")])
            batch_keys.append(keys)
            batch_vals.append(vals)
            out_lengths.append(len(keys))
    if batch_keys:
        keys = xp.ascontiguousarray(xp.concatenate(batch_keys), dtype="uint64")
        vals = xp.ascontiguousarray(xp.concatenate(batch_vals), dtype="f")
    else:
        keys, vals = xp.zeros((0,), dtype="uint64"), xp.zeros((0,), dtype="f")
    out = (keys, vals, xp.asarray(out_lengths, dtype="int32"))

    def backprop(dY):
        return []

    return out, backprop


# -- the CRF output layer ---------------------------------------------------------


def crf_layer(emitters: List[Model], nO: Optional[int] = None, decode: str = "marginal",
              head_scale: float = 1.0, segments: str = "docs") -> Model:
    """Sum of the emitters' ``[n_sentences, nO]`` scores -> CRF marginals (see the
    module docstring). Parameters: ``W`` ``[nO, nO]`` transitions, ``start``
    and ``end`` ``[nO]``, all initialised to 0 (so an untrained layer is the
    softmax of the emissions). The scores of the emitters after the first
    (the sparse part) and the CRF parameters are multiplied by ``head_scale``:
    with Adam that multiplies their effective learning rate, so one optimizer
    can fine-tune a transformer (small rate) and train these linear parts."""
    if decode not in DECODES:
        raise RhetoricError(f"Unknown decode {decode!r}: use one of {DECODES}")
    if segments not in SEGMENTS:
        raise RhetoricError(f"Unknown segments {segments!r}: use one of {SEGMENTS}")
    return Model(
        "crf",
        _crf_forward,
        init=_crf_init,
        layers=emitters,
        dims={"nO": nO},
        params={"W": None, "start": None, "end": None},
        attrs={"decode": decode, "head_scale": float(head_scale), "segments": segments},
    )


def _crf_init(model: Model, X=None, Y=None) -> None:
    nO = model.get_dim("nO")
    for layer in model.layers:
        layer.get_ref("output").set_dim("nO", nO)
        layer.initialize(X=X)
    model.set_param("W", model.ops.alloc2f(nO, nO))
    model.set_param("start", model.ops.alloc1f(nO))
    model.set_param("end", model.ops.alloc1f(nO))


def _split(flat, shapes: Sequence[Tuple[int, ...]]) -> List:
    """Consecutive pieces of the 1-d ``flat`` with ``shapes``."""
    out, i = [], 0
    for shape in shapes:
        size = int(numpy.prod(shape))
        out.append(flat[i : i + size].reshape(shape))
        i += size
    return out


def _crf_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool) -> Tuple[Floats2d, Callable]:
    """The CRF runs on the CPU (float64 torch, T small steps per batch): one
    device->host copy of the emissions and parameters, one host->device copy
    of the output, and the same in backprop (on the CPU no copy at all)."""
    import torch

    ops = model.ops
    c = model.attrs.get("head_scale", 1.0)
    outputs = [layer(X, is_train) for layer in model.layers]
    E = outputs[0][0]
    for scores, _ in outputs[1:]:
        E = E + scores * c
    lengths, _ = segments_of(X, model.attrs.get("segments", "docs"))
    params = [model.get_param(name) for name in ("W", "start", "end")]
    shapes = [E.shape] + [p.shape for p in params]
    flat = ops.xp.concatenate([E.ravel()] + [p.ravel() for p in params])
    E_np, W, start, end = _split(ops.to_numpy(flat), shapes)
    W, start, end = W * c, start * c, end * c
    if not is_train and model.attrs["decode"] == "viterbi":
        E_np = E_np.astype("float64")
        out = numpy.zeros(E_np.shape, dtype="f")
        row = 0
        for n in lengths:
            for t, k in enumerate(viterbi_path(E_np[row : row + n], W, start, end)):
                out[row + t, k] = 1.0
            row += n
        return ops.asarray2f(out), lambda dY: []
    tensors = [
        torch.tensor(numpy.asarray(a, dtype="float64"), requires_grad=is_train)
        for a in (E_np, W, start, end)
    ]
    log_marg = crf_log_marginals(*tensors, lengths)
    probs = ops.asarray2f(numpy.exp(log_marg.detach().numpy()).astype("f"))

    def backprop(dY: Floats2d):
        # dY: gradient w.r.t. the log-marginals (see the module docstring)
        grad = torch.tensor(numpy.asarray(ops.to_numpy(dY), dtype="float64"))
        log_marg.backward(grad)
        grads = numpy.concatenate([t.grad.numpy().astype("f").ravel() for t in tensors])
        dE, dW, dstart, dend = _split(ops.asarray1f(grads), shapes)
        model.inc_grad("W", dW * c)
        model.inc_grad("start", dstart * c)
        model.inc_grad("end", dend * c)
        outputs[0][1](dE)
        for _, bp in outputs[1:]:
            bp(dE * c)
        return []

    return probs, backprop


def emitters(dense: List[Model], ngram_size: int, ngram_length: int, segments: str = "docs") -> List[Model]:
    """The emitters of ``crf_layer``: the ``dense`` layers (docs -> sentence
    representations) chained with a Linear, and (``ngram_size`` > 0) the sentence's hashed n-grams and
    position buckets (``sentence_ngrams``) -> SparseLinear with
    ``ngram_length`` rows; each has its output layer as ref "output"."""
    dense_out = Linear()
    dense_part = chain(*dense, dense_out)
    dense_part.set_ref("output", dense_out)
    out = [dense_part]
    if ngram_size > 0:
        sparse_out = SparseLinear_v2(length=ngram_length)
        # numpy-only layers (SparseLinear's forward is Cython on numpy): on the CPU whatever the ops
        sparse = with_cpu_chain(sentence_ngrams(ngram_size, segments=segments), sparse_out)
        sparse.set_ref("output", sparse_out)
        out.append(sparse)
    return out


@registry.architectures("spacy_rhetoric.SequenceSentenceClassifier.v1")
@architecture(*CONTEXT_TRUNK, *SEQUENCE_HEAD, "nO")
def build_sequence_sentence_classifier(tok2vec: Model, ngram_size: int, ngram_length: int, decode: str,
                                       head_scale: float, nO: Optional[int], **trunk: Any) -> Model:
    """Context trunk -> Linear, plus hashed n-grams and position buckets ->
    SparseLinear (``ngram_size`` 0: no sparse part), summed into emissions ->
    linear-chain CRF over each doc's sentences -> marginals (``decode``
    "marginal") or the Viterbi path ("viterbi", at prediction time).

    encoder (block), pooling, width, maxout_pieces, dropout: as
    ``spacy_rhetoric.ContextSentenceClassifier.v1``.
    ngram_size (int): longest n-gram of the sparse part; 0 leaves it out.
    ngram_length (int): rows of the sparse weight table (hash buckets).
    head_scale (float): learning-rate multiplier (by reparametrisation, see
        ``crf_layer``) of the sparse part and the CRF parameters; e.g. 10 when
        the optimizer's rate is set for fine-tuning a transformer.
    """
    pooler, in_context = build_context_trunk(tok2vec, **trunk)
    model = crf_layer(emitters([pooler, in_context, Dropout(trunk["dropout"])], ngram_size, ngram_length),
                      nO=nO, decode=decode, head_scale=head_scale)
    return sentence_model(model, tok2vec=tok2vec, pooler=pooler, output_layer=model, context=True)
