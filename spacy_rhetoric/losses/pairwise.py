"""Losses over the pairs and triplets of a labelled batch: batch-all triplet
(SciToricsBERT eq. 2), multi-similarity with its miner (eq. 4), supervised
NT-Xent (eq. 5) and CoSaEmb's margin-graded triplet loss. Registered as
``spacy_rhetoric.BatchAllTripletLoss.v1``, ``MultiSimilarityLoss.v1``,
``NTXentLoss.v1``, ``MarginGradedTripletLoss.v1``."""
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from spacy.util import registry

from ..errors import RhetoricError
from .base import MetricLoss, _check_inputs, _hinge_sum, cosine_matrix, pair_masks, pairwise_distances, zero_loss

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
            raise RhetoricError(f"BatchAllTripletLoss: margin must be >= 0, got {margin}")
        self.margin = float(margin)
        self.normalize = bool(normalize)
        self.squared = bool(squared)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = _check_inputs("BatchAllTripletLoss", embeddings, labels)
        if embeddings.shape[0] < 3:
            return zero_loss(embeddings)
        x = F.normalize(embeddings, p=2, dim=1) if self.normalize else embeddings
        dist = pairwise_distances(x, squared=self.squared)
        pos, neg = pair_masks(labels)
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
            raise RhetoricError(f"MultiSimilarityLoss: alpha and beta must be > 0, got {alpha}, {beta}")
        if epsilon is not None and epsilon < 0:
            raise RhetoricError(f"MultiSimilarityLoss: epsilon must be >= 0 or None, got {epsilon}")
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.base = float(base)
        self.epsilon = None if epsilon is None else float(epsilon)

    def mine(self, sim: torch.Tensor, labels: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(kept positive, kept negative) [N, N] masks after Wang et al.'s mining."""
        pos, neg = pair_masks(labels)
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
        sim = cosine_matrix(embeddings)
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
            raise RhetoricError(f"NTXentLoss: temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = _check_inputs("NTXentLoss", embeddings, labels)
        if embeddings.shape[0] < 2:
            return zero_loss(embeddings)
        pos, neg = pair_masks(labels)
        if not bool(pos.any()):
            return zero_loss(embeddings)
        logits = cosine_matrix(embeddings) / self.temperature
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
            raise RhetoricError(
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
                    raise RhetoricError(
                        f"MarginGradedTripletLoss: pair_margins keys must look like 'A|B', got {key!r}"
                    )
                out.append((parts[0], parts[1], float(value)))
        else:
            for item in pair_margins:
                if len(item) != 3:
                    raise RhetoricError(
                        f"MarginGradedTripletLoss: pair_margins items must be [A, B, margin], got {item!r}"
                    )
                out.append((item[0], item[1], float(item[2])))
        for a, b, m in out:
            if m < 0:
                raise RhetoricError(f"MarginGradedTripletLoss: negative margin {m} for pair {a!r}|{b!r}")
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
            raise RhetoricError(
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
# registry
# --------------------------------------------------------------------------


@registry.misc("spacy_rhetoric.BatchAllTripletLoss.v1")
def batch_all_triplet_loss_v1(
    margin: float = 0.05, normalize: bool = True, squared: bool = False
) -> BatchAllTripletLoss:
    """Batch-all triplet loss; margin 0.05 on L2-normalised embeddings
    (SciToricsBERT eq. 2, App. B Table 6)."""
    return BatchAllTripletLoss(margin=margin, normalize=normalize, squared=squared)



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

