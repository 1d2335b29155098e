"""Losses with one weight vector per class (``needs_classes``): softmax
cross-entropy over a linear head (SciToricsBERT eq. 1) and ArcFace (eq. 3).
Registered as ``spacy_rhetoric.SoftmaxLoss.v1`` / ``ArcFaceLoss.v1``."""
from typing import Optional

import torch
import torch.nn.functional as F
from spacy.util import registry

from ..errors import RhetoricError
from .base import _check_inputs, _ClassWeightLoss, zero_loss

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
            raise RhetoricError(f"ArcFaceLoss: scale must be > 0, got {scale}")
        if not 0 <= margin < 3.14159:
            raise RhetoricError(f"ArcFaceLoss: margin must be in [0, pi) radians, got {margin}")
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
# registry
# --------------------------------------------------------------------------


@registry.misc("spacy_rhetoric.SoftmaxLoss.v1")
def softmax_loss_v1() -> SoftmaxLoss:
    """Softmax cross-entropy with a linear class head (SciToricsBERT eq. 1)."""
    return SoftmaxLoss()



@registry.misc("spacy_rhetoric.ArcFaceLoss.v1")
def arcface_loss_v1(margin: float = 0.5, scale: float = 16.0) -> ArcFaceLoss:
    """ArcFace; m = 0.5, s = 16 (SciToricsBERT eq. 3, App. B Table 6)."""
    return ArcFaceLoss(margin=margin, scale=scale)

