"""What the metric losses share (see the package docstring): the
``MetricLoss`` interface and the class-weight base, input checks, the
degenerate-batch zero, masked pairwise distances / cosines and the
batch-all hinge sums of the triplet losses."""
from typing import Sequence, Tuple, Union

import torch
import torch.nn.functional as F

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


def pair_masks(labels: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
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


def cosine_matrix(x: torch.Tensor) -> torch.Tensor:
    """Cosine similarities between the rows of ``x`` ([N, D] -> [N, N])."""
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

