"""Metric-learning losses for sentence embeddings (plain torch).

Every label-based loss is a :class:`MetricLoss` (a ``torch.nn.Module``)::

    loss = registry.misc.get("spacy_rhetoric.ArcFaceLoss.v1")()   # a NEW module
    loss.initialize(n_classes, width)      # class weights (softmax, ArcFace); no-op otherwise
    value = loss(embeddings, labels)       # [N, D] float, [N] long -> scalar tensor

Registered in ``registry.misc`` (entry points ``spacy_misc``), with the
papers' hyper-parameters as defaults:

=============================================  ====================================================
``spacy_rhetoric.SoftmaxLoss.v1()``            SciToricsBERT eq. 1 (linear head + cross-entropy)
``spacy_rhetoric.BatchAllTripletLoss.v1``      SciToricsBERT eq. 2, all valid triplets; m = 0.05
``spacy_rhetoric.ArcFaceLoss.v1``              SciToricsBERT eq. 3; m = 0.5, s = 16
``spacy_rhetoric.MultiSimilarityLoss.v1``      SciToricsBERT eq. 4 + Wang et al. (2019) mining;
                                               alpha = 2, beta = 40, lambda = 0.75, epsilon = 0.1
``spacy_rhetoric.NTXentLoss.v1``               SciToricsBERT eq. 5 (supervised); T = 0.1
``spacy_rhetoric.MarginGradedTripletLoss.v1``  CoSaEmb eq. 5 with margin gradation (1, 2, 3)
``spacy_rhetoric.CosinePairLoss.v1()``         CitRet / SBERT cosine-similarity loss (pairs)
=============================================  ====================================================

SciToricsBERT defaults are the values marked in its Table 6 (App. B, chosen on
validation data); it trains the softmax/ArcFace losses with PK batches of
P = 64, K = 1 and the others with P = 8, K = 8 (``spacy_rhetoric.pk_batcher.v1``).

Degenerate batches
------------------
A batch that defines no term of a loss (no positive pair, a single class,
no valid triplet, no triplet with a positive hinge, an empty batch, or no
pair that survives multi-similarity mining) gives a loss of exactly 0 that is
still connected to ``embeddings`` (``embeddings.sum() * 0``): ``backward()``
works and produces zero gradients, never NaN. Distances use a square root
that is masked at 0 (identical embeddings) so their gradient stays finite.

Class weights (softmax, ArcFace) are created in float32 by ``initialize`` and
cast to the embeddings' dtype in ``forward`` (so ``gradcheck`` in float64
works and the optimiser still updates the float32 master weights).

pytorch-metric-learning
-----------------------
``tests/test_losses_pml.py`` checks four losses against pytorch-metric-learning
2.9.0 (PML, a dev dependency): the same embeddings, labels, class weights and
hyper-parameters give the same value and the same gradients (float64):

* ``ArcFaceLoss`` = PML ``ArcFaceLoss`` with ``margin`` in degrees and
  ``W = weight.T`` (PML stores [width, n_classes]);
* ``MultiSimilarityLoss`` = PML ``MultiSimilarityLoss(alpha, beta, base)``
  on the pairs of PML's ``MultiSimilarityMiner(epsilon)`` (``epsilon=None``:
  no miner). Our "an anchor counts only if it keeps a positive AND a
  negative" rule is implied by the two mining inequalities, so the miners
  agree;
* ``NTXentLoss`` = PML ``NTXentLoss`` with pairs from the labels;
* ``BatchAllTripletLoss`` = PML ``TripletMarginLoss`` (all triplets,
  ``AvgNonZeroReducer``) with ``LpDistance(normalize_embeddings=normalize,
  power=2 if squared else 1)``.

Differences on purpose (tested as such): PML's ArcFace goes through
``acos``, whose gradient is NaN for an embedding lying on its class weight
(ours: ``cos theta cos m - sin theta sin m`` with the sine clamped at
sqrt(eps), finite); PML's pair losses return 0 for a batch in which mining
leaves at most one positive and one negative pair (ours keeps that anchor's
terms). The softmax, margin-graded and cosine-pair losses have no PML
counterpart (PML's ``NormalizedSoftmaxLoss`` normalises the weights).

The implementations here are kept, not replaced by calls to PML, because
they are faster: one forward + backward on a 64 x 384 float32 batch of 8
labels x 8, one thread (``benchmarks/bench_losses.py``; whole-process CPU
time minus start-up, benchmarks/README.md) takes 0.61 vs 0.73 ms (ArcFace),
1.14 vs 2.66 ms (multi-similarity with mining), 0.90 vs 37 ms (NT-Xent: PML
builds a positive-pair x negative-pair matrix) and 1.87 vs 2.72 ms (batch-all
triplet). Also, PML is not a run-time dependency, and the class-weight losses
keep the ``initialize`` / ``needs_classes`` interface, the ``weight``
parameter name saved with the encoder and float32 master weights (PML's
``ArcFaceLoss`` converts ``W`` in place to the embeddings' dtype). Nothing
here is thinc-specific: the encoder calls these modules through torch.

Length: one module (about 850 lines, most of it docstrings with the papers'
equations) on purpose: the seven losses share the ``MetricLoss`` interface,
the masked pairwise-distance helpers and the degenerate-batch rule above, and
every registered function is a thin wrapper next to its class; split by loss,
each file would import the same private helpers.
"""
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from spacy.util import registry

__all__ = [
    "MetricLoss",
    "SoftmaxLoss",
    "BatchAllTripletLoss",
    "ArcFaceLoss",
    "MultiSimilarityLoss",
    "NTXentLoss",
    "MarginGradedTripletLoss",
    "CosinePairLoss",
    "pairwise_distances",
]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def zero_loss(tensor: torch.Tensor) -> torch.Tensor:
    """A scalar 0 that is part of ``tensor``'s graph (zero gradients, no NaN)."""
    return tensor.sum() * 0.0 + 0.0


def _check_inputs(name: str, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 2:
        shape = tuple(embeddings.shape) if isinstance(embeddings, torch.Tensor) else type(embeddings).__name__
        raise ValueError(f"{name}: embeddings must be a 2-d tensor [N, D], got {shape}")
    if not embeddings.is_floating_point():
        raise ValueError(f"{name}: embeddings must be floating point, got {embeddings.dtype}")
    labels = torch.as_tensor(labels, device=embeddings.device)
    if labels.dim() != 1 or labels.shape[0] != embeddings.shape[0]:
        raise ValueError(
            f"{name}: labels must be a 1-d tensor with one label per embedding "
            f"({embeddings.shape[0]}), got shape {tuple(labels.shape)}"
        )
    if labels.is_floating_point():
        raise ValueError(f"{name}: labels must be integer class ids, got {labels.dtype}")
    return labels.long()


def _pair_masks(labels: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(positive, negative) boolean [N, N] masks: same label without the
    diagonal, and different label."""
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(labels.shape[0], dtype=torch.bool, device=labels.device)
    return same & ~eye, ~same


def pairwise_distances(x: torch.Tensor, *, squared: bool = False) -> torch.Tensor:
    """Euclidean distances between the rows of ``x`` ([N, D] -> [N, N]).

    Computed from the Gram matrix (O(N^2) memory); the diagonal is exactly 0
    and the square root is masked at (numerically) zero distances, so the
    gradient is finite even for identical rows (it is 0 there)."""
    sq = (x * x).sum(dim=1)
    d2 = (sq[:, None] + sq[None, :] - 2.0 * (x @ x.t())).clamp_min(0.0)
    eye = torch.eye(x.shape[0], dtype=torch.bool, device=x.device)
    d2 = d2.masked_fill(eye, 0.0)
    if squared:
        return d2
    tiny = torch.finfo(x.dtype).eps
    return torch.where(d2 > tiny, d2.clamp_min(tiny).sqrt(), torch.zeros_like(d2))


def _cosine_matrix(x: torch.Tensor) -> torch.Tensor:
    xn = F.normalize(x, p=2, dim=1)
    return xn @ xn.t()


class _PairwiseHingeSum(torch.autograd.Function):
    """``sum_a sum_{p,n} relu(c[a,p] - e[a,n])`` and the number of positive
    terms, where ``c[a,p] = -inf`` / ``e[a,n] = +inf`` mark entries outside
    the positive / negative set of anchor a.

    Every batch-all triplet loss here has this form (the margin splits into a
    part depending on (a, p), put in ``c``, and one depending on (a, n), put
    in ``e``), which avoids the [N, N, N] triplet tensor: per anchor row, the
    ``e`` values are sorted once and ``sum_n relu(c - e_n) = k c - (sum of the
    k smallest e)`` with ``k = #{e_n < c}`` (searchsorted). Time
    O(N^2 log N), memory O(N^2). Gradients: ``d/dc[a,p] = #{n: e[a,n] <
    c[a,p]}``, ``d/de[a,n] = -#{p: c[a,p] > e[a,n]}``."""

    @staticmethod
    def forward(ctx, c: torch.Tensor, e: torch.Tensor):  # type: ignore[override]
        n = c.shape[1]
        e_sorted, _ = torch.sort(e, dim=1)
        finite_e = torch.where(torch.isfinite(e_sorted), e_sorted, torch.zeros_like(e_sorted))
        prefix = torch.cat([finite_e.new_zeros(e.shape[0], 1), finite_e.cumsum(dim=1)], dim=1)
        valid_c = torch.isfinite(c)
        c_safe = torch.where(valid_c, c, torch.full_like(c, float("-inf")))
        k = torch.searchsorted(e_sorted.contiguous(), c_safe.contiguous(), side="left")  # #{e < c}
        k = torch.where(valid_c, k, torch.zeros_like(k))
        c_zero = torch.where(valid_c, c, torch.zeros_like(c))
        per_c = k.to(c.dtype) * c_zero - prefix.gather(1, k)
        total = per_c.sum()
        c_sorted, _ = torch.sort(c, dim=1)
        count_e = n - torch.searchsorted(c_sorted.contiguous(), e.contiguous(), side="right")  # #{c > e}
        count_e = torch.where(torch.isfinite(e), count_e, torch.zeros_like(count_e))
        count = k.sum()
        ctx.save_for_backward(k.to(c.dtype), count_e.to(e.dtype))
        ctx.mark_non_differentiable(count)
        return total, count

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_total, grad_count):  # type: ignore[override]
        k, count_e = ctx.saved_tensors
        return grad_total * k, -grad_total * count_e


def _hinge_sum(
    dist: torch.Tensor,
    pos_mask: torch.Tensor,
    neg_mask: torch.Tensor,
    pos_margin: Union[float, torch.Tensor] = 0.0,
    neg_margin: Union[float, torch.Tensor] = 0.0,
) -> Tuple[torch.Tensor, int]:
    """(sum, count) of the positive hinges ``d[a,p] + pos_margin[a,p] -
    (d[a,n] - neg_margin[a,n])`` over all (a, p, n) with ``pos_mask[a,p]`` and
    ``neg_mask[a,n]``."""
    inf = torch.tensor(float("inf"), dtype=dist.dtype, device=dist.device)
    c = torch.where(pos_mask, dist + pos_margin, -inf)
    e = torch.where(neg_mask, dist - neg_margin, inf)
    total, count = _PairwiseHingeSum.apply(c, e)
    return total, int(count)


# --------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------


class MetricLoss(torch.nn.Module):
    """Base class of the label-based metric losses.

    ``needs_classes`` is True for losses that own one weight vector per class
    (softmax cross-entropy, ArcFace); they must be ``initialize``d with the
    number of classes and the embedding width before the first ``forward``.
    ``set_labels`` gives the label names in class-id order to losses that are
    configured by label name (``MarginGradedTripletLoss``); it is a no-op for
    the others.
    """

    needs_classes: bool = False

    def initialize(self, n_classes: int, width: int) -> None:
        """Create class weights if needed (no-op otherwise)."""
        return None

    def set_labels(self, labels: Sequence[str]) -> None:
        """Label names in class-id order (used only by name-configured losses)."""
        return None

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError


class _ClassWeightLoss(MetricLoss):
    needs_classes = True

    def __init__(self) -> None:
        super().__init__()
        self.n_classes = 0
        self.width = 0

    def _check_ready(self, name: str, embeddings: torch.Tensor, labels: torch.Tensor) -> None:
        if not self.n_classes:
            raise ValueError(f"{name}: call initialize(n_classes, width) before the first forward")
        if embeddings.shape[1] != self.width:
            raise ValueError(
                f"{name}: embeddings have width {embeddings.shape[1]}, the class weights {self.width}"
            )
        if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= self.n_classes):
            raise ValueError(
                f"{name}: label ids must be in [0, {self.n_classes}), got "
                f"[{int(labels.min())}, {int(labels.max())}]"
            )

    @staticmethod
    def _validate_sizes(name: str, n_classes: int, width: int) -> Tuple[int, int]:
        n_classes, width = int(n_classes), int(width)
        if n_classes < 1 or width < 1:
            raise ValueError(f"{name}: n_classes and width must be >= 1, got {n_classes}, {width}")
        return n_classes, width


# --------------------------------------------------------------------------
# softmax cross-entropy
# --------------------------------------------------------------------------


class SoftmaxLoss(_ClassWeightLoss):
    """Softmax cross-entropy over a linear class head (SciToricsBERT §3.3 eq. 1)::

        L = -1/N sum_i log softmax(W^T x_i + b)[y_i]

    The head ``W`` ([D, n] stored as ``linear.weight`` [n, D]) and bias ``b``
    belong to the loss (created by ``initialize``); the embeddings are used
    as they are (not normalised). No hyper-parameters. Empty batch -> 0.
    """

    def __init__(self) -> None:
        super().__init__()
        self.linear: Optional[torch.nn.Linear] = None

    def initialize(self, n_classes: int, width: int) -> None:
        n_classes, width = self._validate_sizes("SoftmaxLoss", n_classes, width)
        self.n_classes, self.width = n_classes, width
        self.linear = torch.nn.Linear(width, n_classes)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = _check_inputs("SoftmaxLoss", embeddings, labels)
        self._check_ready("SoftmaxLoss", embeddings, labels)
        if embeddings.shape[0] == 0:
            return zero_loss(embeddings) + zero_loss(self.linear.weight).to(embeddings.dtype)
        weight = self.linear.weight.to(embeddings.dtype)
        bias = self.linear.bias.to(embeddings.dtype)
        logits = embeddings @ weight.t() + bias
        return F.cross_entropy(logits, labels)


# --------------------------------------------------------------------------
# ArcFace
# --------------------------------------------------------------------------


class ArcFaceLoss(_ClassWeightLoss):
    """Additive angular margin loss (Deng et al. 2019; SciToricsBERT §3.3 eq. 3)::

        L = -1/N sum_i log  exp(s cos(theta_{y_i} + m)) /
                            (exp(s cos(theta_{y_i} + m)) + sum_{j != y_i} exp(s cos theta_j))

    with ``cos theta_j`` the cosine between the embedding and the class weight
    ``W_j`` (both L2-normalised). Defaults ``margin = 0.5`` (radians) and
    ``scale = 16``: SciToricsBERT App. B, Table 6.

    ``cos(theta + m)`` is computed as ``cos theta cos m - sin theta sin m``.
    Where ``theta + m > pi`` the curve would turn back up (a larger angle
    would give a smaller loss); there, as in the ArcFace reference
    implementation, the target logit becomes ``cos theta - m sin m``
    (monotonic, continuous at ``theta = pi - m``). Zero-norm embeddings are
    normalised with an epsilon (cosine 0). Empty batch -> 0.
    """

    def __init__(self, margin: float = 0.5, scale: float = 16.0) -> None:
        super().__init__()
        if scale <= 0:
            raise ValueError(f"ArcFaceLoss: scale must be > 0, got {scale}")
        if not 0 <= margin < 3.14159:
            raise ValueError(f"ArcFaceLoss: margin must be in [0, pi) radians, got {margin}")
        self.margin = float(margin)
        self.scale = float(scale)
        self.register_parameter("weight", None)

    def initialize(self, n_classes: int, width: int) -> None:
        n_classes, width = self._validate_sizes("ArcFaceLoss", n_classes, width)
        self.n_classes, self.width = n_classes, width
        weight = torch.empty(n_classes, width)
        torch.nn.init.xavier_uniform_(weight)
        self.weight = torch.nn.Parameter(weight)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        import math

        labels = _check_inputs("ArcFaceLoss", embeddings, labels)
        self._check_ready("ArcFaceLoss", embeddings, labels)
        if embeddings.shape[0] == 0:
            return zero_loss(embeddings) + zero_loss(self.weight).to(embeddings.dtype)
        weight = F.normalize(self.weight.to(embeddings.dtype), p=2, dim=1)
        x = F.normalize(embeddings, p=2, dim=1)
        cos = (x @ weight.t()).clamp(-1.0, 1.0)  # [N, n]
        cos_y = cos.gather(1, labels[:, None]).squeeze(1)
        tiny = torch.finfo(cos.dtype).eps
        sin_y = (1.0 - cos_y * cos_y).clamp_min(tiny).sqrt()
        m = self.margin
        phi = cos_y * math.cos(m) - sin_y * math.sin(m)
        # theta + m > pi  <=>  cos theta < cos(pi - m)
        phi = torch.where(cos_y > math.cos(math.pi - m), phi, cos_y - m * math.sin(m))
        one_hot = F.one_hot(labels, num_classes=self.n_classes).to(cos.dtype)
        logits = self.scale * (cos + one_hot * (phi - cos_y)[:, None])
        return F.cross_entropy(logits, labels)


# --------------------------------------------------------------------------
# batch-all triplet
# --------------------------------------------------------------------------


class BatchAllTripletLoss(MetricLoss):
    """Batch-all triplet loss (SciToricsBERT §3.3 eq. 2; the SBERT
    ``BatchAllTripletLoss`` of the contrastive-embeddings paper §3.1)::

        L = 1/K sum_{(a,p,n)} max(d(x_a, x_p) - d(x_a, x_n) + m, 0)

    over ALL valid triplets of the batch (``y_a == y_p``, ``a != p``,
    ``y_a != y_n``; SciToricsBERT footnote 5: "all possible triplets are used
    ... without negative sampling"), K = number of triplets with a positive
    hinge (averaging only over the active triplets).

    Distance: Euclidean (not squared, as in eq. 2) on L2-NORMALISED
    embeddings (``normalize=True``). SciToricsBERT's selected margin
    ``m = 0.05`` (Table 6) only makes sense on a bounded scale (d in [0, 2]);
    the paper does not state the normalisation, so this is our reading (it is
    also the default distance of the metric-learning setup of Musgrave et al.
    2020, which the paper follows for its PK batches). SBERT's
    ``BatchAllTripletLoss`` (contrastive-embeddings paper) uses unnormalised
    embeddings with margin 5: ``normalize=False, margin=5`` reproduces it.

    The sum over triplets is computed per anchor with sorting (time
    O(N^2 log N), memory O(N^2)), without building the N^3 triplet tensor.
    Degenerate batches (single class, no positive pair, all hinges 0) -> 0.
    """

    def __init__(self, margin: float = 0.05, normalize: bool = True, squared: bool = False) -> None:
        super().__init__()
        if margin < 0:
            raise ValueError(f"BatchAllTripletLoss: margin must be >= 0, got {margin}")
        self.margin = float(margin)
        self.normalize = bool(normalize)
        self.squared = bool(squared)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = _check_inputs("BatchAllTripletLoss", embeddings, labels)
        if embeddings.shape[0] < 3:
            return zero_loss(embeddings)
        x = F.normalize(embeddings, p=2, dim=1) if self.normalize else embeddings
        dist = pairwise_distances(x, squared=self.squared)
        pos, neg = _pair_masks(labels)
        if not bool(pos.any()) or not bool(neg.any()):
            return zero_loss(embeddings)
        total, n_active = _hinge_sum(dist, pos, neg, pos_margin=self.margin)
        if n_active == 0:
            return zero_loss(embeddings)
        return total / n_active


# --------------------------------------------------------------------------
# multi-similarity
# --------------------------------------------------------------------------


class MultiSimilarityLoss(MetricLoss):
    """Multi-similarity loss with pair mining (Wang et al. 2019; SciToricsBERT
    §3.3 eq. 4). With ``S`` the cosine-similarity matrix of the batch::

        L = 1/N sum_i { 1/alpha log[1 + sum_{j in P_i} exp(-alpha (S_ij - lambda))]
                      + 1/beta  log[1 + sum_{k in N_i} exp( beta (S_ik - lambda))] }

    Pair mining (Wang et al. 2019 §3.2, ``epsilon``): for anchor i, a negative
    k is kept if ``S_ik + epsilon > min_{j positive} S_ij`` and a positive j
    is kept if ``S_ij - epsilon < max_{k negative} S_ik``; as in the authors'
    implementation an anchor contributes only if it keeps at least one
    positive and one negative pair, and the sum is divided by the batch size
    N. ``epsilon=None`` disables mining (plain eq. 4, every anchor).

    Defaults ``alpha = 2, beta = 40, base (lambda) = 0.75``: SciToricsBERT
    App. B, Table 6; ``epsilon = 0.1``: Wang et al. (2019) §5 (implementation
    details). Degenerate batches (no positive pair, single class, nothing
    mined) -> 0.
    """

    def __init__(
        self, alpha: float = 2.0, beta: float = 40.0, base: float = 0.75, epsilon: Optional[float] = 0.1
    ) -> None:
        super().__init__()
        if alpha <= 0 or beta <= 0:
            raise ValueError(f"MultiSimilarityLoss: alpha and beta must be > 0, got {alpha}, {beta}")
        if epsilon is not None and epsilon < 0:
            raise ValueError(f"MultiSimilarityLoss: epsilon must be >= 0 or None, got {epsilon}")
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.base = float(base)
        self.epsilon = None if epsilon is None else float(epsilon)

    def mine(self, sim: torch.Tensor, labels: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(kept positive, kept negative) [N, N] masks after Wang et al.'s mining."""
        pos, neg = _pair_masks(labels)
        if self.epsilon is None:
            return pos, neg
        s = sim.detach()
        inf = torch.tensor(float("inf"), dtype=s.dtype, device=s.device)
        hardest_pos = torch.where(pos, s, inf).min(dim=1).values  # +inf without positives
        hardest_neg = torch.where(neg, s, -inf).max(dim=1).values  # -inf without negatives
        neg_kept = neg & (s + self.epsilon > hardest_pos[:, None])
        pos_kept = pos & (s - self.epsilon < hardest_neg[:, None])
        anchor_ok = pos_kept.any(dim=1) & neg_kept.any(dim=1)
        return pos_kept & anchor_ok[:, None], neg_kept & anchor_ok[:, None]

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = _check_inputs("MultiSimilarityLoss", embeddings, labels)
        n = embeddings.shape[0]
        if n < 2:
            return zero_loss(embeddings)
        sim = _cosine_matrix(embeddings)
        pos, neg = self.mine(sim, labels)
        if not bool(pos.any() or neg.any()):
            return zero_loss(embeddings)
        pos_term = self._soft_sum(-self.alpha * (sim - self.base), pos) / self.alpha
        neg_term = self._soft_sum(self.beta * (sim - self.base), neg) / self.beta
        return (pos_term + neg_term).sum() / n

    @staticmethod
    def _soft_sum(z: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Row-wise log(1 + sum_{mask} exp(z)), stable and NaN-free (rows
        without any masked entry give 0 with zero gradient)."""
        neg_inf = torch.tensor(float("-inf"), dtype=z.dtype, device=z.device)
        masked = torch.where(mask, z, neg_inf)
        zeros = torch.zeros(z.shape[0], 1, dtype=z.dtype, device=z.device)
        return torch.logsumexp(torch.cat([zeros, masked], dim=1), dim=1)


# --------------------------------------------------------------------------
# NT-Xent (supervised)
# --------------------------------------------------------------------------


class NTXentLoss(MetricLoss):
    """Supervised NT-Xent (Chen et al. 2020; SciToricsBERT §3.3 eq. 5)::

        L = -1/|P| sum_{(i,j) in P} log  exp(S_ij/T) / (exp(S_ij/T) + sum_{k in N_i} exp(S_ik/T))

    ``S`` = cosine similarities, P = ordered pairs (i, j), i != j, with the
    same label (so both directions count), N_i = samples with a label other
    than i's. Default ``temperature = 0.1``: SciToricsBERT App. B, Table 6.
    No positive pair (all labels distinct, N < 2) -> 0; a single class gives
    log(1) = 0 for every pair (no negatives), also 0.
    """

    def __init__(self, temperature: float = 0.1) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"NTXentLoss: temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = _check_inputs("NTXentLoss", embeddings, labels)
        if embeddings.shape[0] < 2:
            return zero_loss(embeddings)
        pos, neg = _pair_masks(labels)
        if not bool(pos.any()):
            return zero_loss(embeddings)
        logits = _cosine_matrix(embeddings) / self.temperature
        has_neg = neg.any(dim=1)
        neg_inf = torch.tensor(float("-inf"), dtype=logits.dtype, device=logits.device)
        # rows without negatives: logsumexp over zeros (finite, then discarded)
        # so that no NaN gradient appears from a row of -inf
        masked = torch.where(neg, logits, neg_inf)
        masked = torch.where(has_neg[:, None], masked, torch.zeros_like(logits))
        neg_lse = torch.where(has_neg, torch.logsumexp(masked, dim=1), neg_inf)
        denom = torch.logaddexp(logits, neg_lse[:, None].expand_as(logits))
        return (denom - logits)[pos].mean()


# --------------------------------------------------------------------------
# margin-graded triplet (CoSaEmb)
# --------------------------------------------------------------------------

LabelRef = Union[str, int]


class MarginGradedTripletLoss(MetricLoss):
    """Triplet loss with margin gradation (CoSaEmb §3.4 eq. 5)::

        L(t) = max(0, d(q, k+)^2 - d(q, k-)^2 + m_t)

    CoSaEmb grades the margin by how related the positive is to the anchor
    compared with the negative: the closer the relation, the larger the
    margin (inter-document < global < local context, ``m = 1, 2, 3`` in its
    best setting), which builds a hierarchy of distances. Here the relation
    between two sentences comes from their labels, on three levels:

    * 2: same label; 1: different labels in the same ``group``; 0: otherwise.

    Every triplet (a, p, n) of the batch with ``level(a, p) > level(a, n)``
    (p != a) is used, with margin ``ladder[level(a,p)] - ladder[level(a,n)]``
    where ``ladder = {2: label_margin, 1: group_margin, 0: 0}``. With the
    defaults ``label_margin = 3, group_margin = 1`` the three triplet types get
    CoSaEmb's margins: (same group vs other group) 1, (same label vs same
    group) 2, (same label vs other group) 3, and the margins add up along the
    ladder. Without ``groups`` every triplet is (same label vs other label)
    with margin ``label_margin``.

    ``pair_margins`` overrides the margin of (same-label positive, negative of
    label B) triplets for anchors of label A: a dict ``{"A|B": m}`` (applies
    to both orders unless "B|A" is also given) or a list of ``[A, B, m]``.

    ``groups`` maps a group name to its labels (``{"intro": ["background",
    "objective"]}``); labels may be names (then the loss needs the label names
    in class-id order: ``labels`` here or ``set_labels``, which the encoder
    calls) or integer class ids. Labels in no group form their own group.

    The averaging is the one of ``BatchAllTripletLoss`` (over triplets with a
    positive hinge). Distance: squared Euclidean (``squared=True``) on the
    raw embeddings (``normalize=False``), as in CoSaEmb; margins of 1-3 need
    unnormalised embeddings (squared distances between unit vectors are at
    most 4). Degenerate batches (no valid triplet, all hinges 0) -> 0.
    """

    def __init__(
        self,
        label_margin: float = 3.0,
        group_margin: float = 1.0,
        groups: Optional[Dict[str, Sequence[LabelRef]]] = None,
        pair_margins: Optional[Union[Dict[str, float], Sequence[Sequence[Any]]]] = None,
        labels: Optional[Sequence[str]] = None,
        normalize: bool = False,
        squared: bool = True,
    ) -> None:
        super().__init__()
        if group_margin < 0 or label_margin < group_margin:
            raise ValueError(
                "MarginGradedTripletLoss: margins must satisfy 0 <= group_margin <= label_margin, "
                f"got group_margin={group_margin}, label_margin={label_margin}"
            )
        self.label_margin = float(label_margin)
        self.group_margin = float(group_margin)
        self.groups = {str(k): list(v) for k, v in (groups or {}).items()}
        self.pair_margins = self._parse_pair_margins(pair_margins)
        self.normalize = bool(normalize)
        self.squared = bool(squared)
        self.label_names: Optional[List[str]] = list(labels) if labels is not None else None

    @staticmethod
    def _parse_pair_margins(pair_margins) -> List[Tuple[LabelRef, LabelRef, float]]:
        if not pair_margins:
            return []
        out: List[Tuple[LabelRef, LabelRef, float]] = []
        if isinstance(pair_margins, dict):
            for key, value in pair_margins.items():
                parts = str(key).split("|")
                if len(parts) != 2 or not all(parts):
                    raise ValueError(
                        f"MarginGradedTripletLoss: pair_margins keys must look like 'A|B', got {key!r}"
                    )
                out.append((parts[0], parts[1], float(value)))
        else:
            for item in pair_margins:
                if len(item) != 3:
                    raise ValueError(
                        f"MarginGradedTripletLoss: pair_margins items must be [A, B, margin], got {item!r}"
                    )
                out.append((item[0], item[1], float(item[2])))
        for a, b, m in out:
            if m < 0:
                raise ValueError(f"MarginGradedTripletLoss: negative margin {m} for pair {a!r}|{b!r}")
        return out

    def set_labels(self, labels: Sequence[str]) -> None:
        self.label_names = list(labels)

    def _resolve(self, ref: LabelRef, n_classes: int) -> Optional[int]:
        """Class id of a label reference (None: a label name not in the label set)."""
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit() and self.label_names is None):
            idx = int(ref)
            if not 0 <= idx < n_classes:
                return None
            return idx
        if self.label_names is None:
            raise ValueError(
                f"MarginGradedTripletLoss: label {ref!r} is a name, but the loss does not know the "
                "label names: pass labels=[...] or call set_labels(labels) (class-id order)"
            )
        try:
            return self.label_names.index(ref)
        except ValueError:
            return None

    def class_tables(self, n_classes: int, device=None) -> Tuple[torch.Tensor, torch.Tensor]:
        """(group id per class [C], margin of same-label triplets by (anchor
        class, negative class) [C, C])."""
        group_of = list(range(n_classes))  # own group by default
        next_group = n_classes
        for name, members in self.groups.items():
            ids = [i for i in (self._resolve(m, n_classes) for m in members) if i is not None]
            for i in ids:
                group_of[i] = next_group
            next_group += 1
        group = torch.tensor(group_of, dtype=torch.long)
        same_group = group[:, None] == group[None, :]
        neg_margin = torch.where(
            same_group,
            torch.full((n_classes, n_classes), self.label_margin - self.group_margin, dtype=torch.float64),
            torch.full((n_classes, n_classes), self.label_margin, dtype=torch.float64),
        )
        explicit = set()
        for a, b, m in self.pair_margins:
            ia, ib = self._resolve(a, n_classes), self._resolve(b, n_classes)
            if ia is None or ib is None:
                continue
            neg_margin[ia, ib] = m
            explicit.add((ia, ib))
        for a, b, m in self.pair_margins:
            ia, ib = self._resolve(a, n_classes), self._resolve(b, n_classes)
            if ia is None or ib is None or (ib, ia) in explicit:
                continue
            neg_margin[ib, ia] = m
        return group.to(device), neg_margin.to(device)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = _check_inputs("MarginGradedTripletLoss", embeddings, labels)
        if embeddings.shape[0] < 3:
            return zero_loss(embeddings)
        n_classes = int(labels.max()) + 1
        if self.label_names is not None:
            n_classes = max(n_classes, len(self.label_names))
        group, neg_margin = self.class_tables(n_classes, embeddings.device)
        neg_margin = neg_margin.to(embeddings.dtype)
        x = F.normalize(embeddings, p=2, dim=1) if self.normalize else embeddings
        dist = pairwise_distances(x, squared=self.squared)
        n = labels.shape[0]
        eye = torch.eye(n, dtype=torch.bool, device=labels.device)
        same_label = labels[:, None] == labels[None, :]
        g = group[labels]
        same_group = g[:, None] == g[None, :]
        level = torch.where(same_label, 2, torch.where(same_group, 1, 0)).masked_fill(eye, 3)
        # margin: same-label positive -> table by (anchor class, negative class);
        # group positive (level 1) vs other group (level 0) -> group_margin
        # two families of triplets, each a product of a positive and a negative set per anchor
        label_margins = neg_margin[labels][:, labels]  # [a, n]
        total1, active1 = _hinge_sum(dist, level == 2, level < 2, neg_margin=label_margins)
        total2, active2 = _hinge_sum(dist, level == 1, level == 0, pos_margin=self.group_margin)
        total, n_active = total1 + total2, active1 + active2
        if n_active == 0:
            return zero_loss(embeddings)
        return total / n_active


# --------------------------------------------------------------------------
# cosine pair loss (not label based)
# --------------------------------------------------------------------------


class CosinePairLoss(torch.nn.Module):
    """Cosine-similarity regression loss for sentence pairs (SBERT's
    ``CosineSimilarityLoss``, used by CitRet §3.1 to fine-tune on citance /
    reference-sentence pairs scored in [0, 1])::

        L = 1/N sum_i (cos(a_i, b_i) - score_i)^2

    ``forward(a [N, D], b [N, D], scores [N]) -> scalar``. Zero vectors have
    cosine 0 (epsilon in the norm). An empty batch -> 0 (connected to a, b).
    """

    def forward(self, a: torch.Tensor, b: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if a.dim() != 2 or b.dim() != 2 or a.shape != b.shape:
            raise ValueError(
                f"CosinePairLoss: a and b must be 2-d tensors of the same shape, got "
                f"{tuple(a.shape)} and {tuple(b.shape)}"
            )
        scores = torch.as_tensor(scores, device=a.device)
        if scores.dim() != 1 or scores.shape[0] != a.shape[0]:
            raise ValueError(
                f"CosinePairLoss: scores must be 1-d with one score per pair ({a.shape[0]}), "
                f"got shape {tuple(scores.shape)}"
            )
        if a.shape[0] == 0:
            return zero_loss(a) + zero_loss(b)
        cos = F.cosine_similarity(a, b, dim=1, eps=1e-8)
        return F.mse_loss(cos, scores.to(cos.dtype))


# --------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------


@registry.misc("spacy_rhetoric.SoftmaxLoss.v1")
def softmax_loss_v1() -> SoftmaxLoss:
    """Softmax cross-entropy with a linear class head (SciToricsBERT eq. 1)."""
    return SoftmaxLoss()


@registry.misc("spacy_rhetoric.BatchAllTripletLoss.v1")
def batch_all_triplet_loss_v1(
    margin: float = 0.05, normalize: bool = True, squared: bool = False
) -> BatchAllTripletLoss:
    """Batch-all triplet loss; margin 0.05 on L2-normalised embeddings
    (SciToricsBERT eq. 2, App. B Table 6)."""
    return BatchAllTripletLoss(margin=margin, normalize=normalize, squared=squared)


@registry.misc("spacy_rhetoric.ArcFaceLoss.v1")
def arcface_loss_v1(margin: float = 0.5, scale: float = 16.0) -> ArcFaceLoss:
    """ArcFace; m = 0.5, s = 16 (SciToricsBERT eq. 3, App. B Table 6)."""
    return ArcFaceLoss(margin=margin, scale=scale)


@registry.misc("spacy_rhetoric.MultiSimilarityLoss.v1")
def multi_similarity_loss_v1(
    alpha: float = 2.0, beta: float = 40.0, base: float = 0.75, epsilon: Optional[float] = 0.1
) -> MultiSimilarityLoss:
    """Multi-similarity loss; alpha 2, beta 40, lambda 0.75 (SciToricsBERT
    eq. 4, App. B Table 6), mining epsilon 0.1 (Wang et al. 2019 §5)."""
    return MultiSimilarityLoss(alpha=alpha, beta=beta, base=base, epsilon=epsilon)


@registry.misc("spacy_rhetoric.NTXentLoss.v1")
def nt_xent_loss_v1(temperature: float = 0.1) -> NTXentLoss:
    """Supervised NT-Xent; T = 0.1 (SciToricsBERT eq. 5, App. B Table 6)."""
    return NTXentLoss(temperature=temperature)


@registry.misc("spacy_rhetoric.MarginGradedTripletLoss.v1")
def margin_graded_triplet_loss_v1(
    label_margin: float = 3.0,
    group_margin: float = 1.0,
    groups: Optional[Dict[str, List[LabelRef]]] = None,
    pair_margins: Optional[Dict[str, float]] = None,
    labels: Optional[List[str]] = None,
    normalize: bool = False,
    squared: bool = True,
) -> MarginGradedTripletLoss:
    """Margin-graded triplet loss; margins 1/2/3 (CoSaEmb §3.4, Training details)."""
    return MarginGradedTripletLoss(
        label_margin=label_margin,
        group_margin=group_margin,
        groups=groups,
        pair_margins=pair_margins,
        labels=labels,
        normalize=normalize,
        squared=squared,
    )


@registry.misc("spacy_rhetoric.CosinePairLoss.v1")
def cosine_pair_loss_v1() -> CosinePairLoss:
    """MSE between cos(a, b) and the target scores (CitRet §3.1 / SBERT)."""
    return CosinePairLoss()


# --------------------------------------------------------------------------
# Losses over explicit (anchor, positive, negatives) tuples: the
# self-supervised pre-training objectives of spacy_rhetoric/pretrain/.


def info_nce_loss(
    anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """SENT-MASK's contrastive loss (Contrastive contextualized sentence
    representations §2.2 eq. 1), averaged over the batch::

        L = -log exp(<s_pos, s_anc>/T) / sum_{s in {s_pos, s_neg^1..N}} exp(<s, s_anc>/T)

    ``anchor``, ``positive``: [B, D]; ``negatives``: [B, N, D]; dot products
    (the paper's similarity; T = 1 in the paper)."""
    if temperature <= 0:
        raise ValueError(f"info_nce_loss: temperature must be > 0, got {temperature}")
    if anchor.shape != positive.shape or negatives.dim() != 3 or negatives.shape[0] != anchor.shape[0]:
        raise ValueError(
            f"info_nce_loss: anchor {tuple(anchor.shape)}, positive {tuple(positive.shape)} and "
            f"negatives {tuple(negatives.shape)} must be [B, D], [B, D], [B, N, D]"
        )
    if anchor.shape[0] == 0:
        return zero_loss(anchor)
    pos = (anchor * positive).sum(-1, keepdim=True)  # [B, 1]
    neg = torch.einsum("bd,bnd->bn", anchor, negatives)  # [B, N]
    logits = torch.cat([pos, neg], dim=1) / temperature
    target = torch.zeros(anchor.shape[0], dtype=torch.long, device=anchor.device)
    return torch.nn.functional.cross_entropy(logits, target)


def graded_triplet_loss(
    anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor, margins: torch.Tensor
) -> torch.Tensor:
    """The explicit-triplet form of ``MarginGradedTripletLoss`` (CoSaEmb §3.4
    eq. 5): mean over the triplets of ``max(0, |a-p|^2 - |a-n|^2 + m_t)``,
    each triplet with its own margin (CoSaEmb: inter-document 1, global 2,
    local 3). Squared Euclidean distances on the raw embeddings, as there.
    Unlike the batch-all class, every given triplet counts in the mean (the
    triplets are built, not mined)."""
    if not (anchor.shape == positive.shape == negative.shape) or anchor.dim() != 2:
        raise ValueError("graded_triplet_loss: anchor, positive and negative must be [B, D] each")
    margins = torch.as_tensor(margins, dtype=anchor.dtype, device=anchor.device).reshape(-1)
    if margins.shape[0] != anchor.shape[0]:
        raise ValueError(f"graded_triplet_loss: {margins.shape[0]} margins for {anchor.shape[0]} triplets")
    if anchor.shape[0] == 0:
        return zero_loss(anchor)
    d_pos = ((anchor - positive) ** 2).sum(-1)
    d_neg = ((anchor - negative) ** 2).sum(-1)
    return torch.relu(d_pos - d_neg + margins).mean()
