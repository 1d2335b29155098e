"""Losses over explicitly given pairs or tuples (built by the caller, not
mined from a labelled batch): CitRet's cosine pair loss
(``spacy_rhetoric.CosinePairLoss.v1``) and the self-supervised pre-training
objectives of ``spacy_rhetoric/pretrain/`` (SENT-MASK's InfoNCE, COSAEMB's
graded triplets)."""

import torch
import torch.nn.functional as F
from spacy.util import registry

from ..errors import RhetoricError
from .base import zero_loss

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
        raise RhetoricError(f"info_nce_loss: temperature must be > 0, got {temperature}")
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
