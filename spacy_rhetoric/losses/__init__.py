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
they are faster (``benchmarks/encoder/bench_losses.py`` times one forward + backward
of each against PML's; PML's NT-Xent builds a positive-pair x negative-pair
matrix). Also, PML is not a run-time dependency, and the class-weight losses
keep the ``initialize`` / ``needs_classes`` interface, the ``weight``
parameter name saved with the encoder and float32 master weights (PML's
``ArcFaceLoss`` converts ``W`` in place to the embeddings' dtype). Nothing
here is thinc-specific: the encoder calls these modules through torch.

Layout (one family per module; every registered function is a thin wrapper
next to its class):

* ``base.py``: the ``MetricLoss`` interface, the class-weight base, input
  checks, the masked pairwise distances and the batch-all hinge sums that
  the losses share (the degenerate-batch rule above lives there);
* ``classification.py``: losses with one weight vector per class (softmax
  cross-entropy, ArcFace);
* ``pairwise.py``: losses over the pairs / triplets of a labelled batch
  (batch-all triplet, multi-similarity with its miner, supervised NT-Xent,
  margin-graded triplet);
* ``tuples.py``: losses over explicitly given pairs or tuples (CitRet's
  cosine pair loss; the pre-training objectives of ``spacy_rhetoric/pretrain/``:
  InfoNCE, graded triplets).

Importing the package registers every loss (``spacy_misc`` entry points name
the family modules).
"""
from .base import MetricLoss, cosine_matrix, pair_masks, pairwise_distances, zero_loss
from .classification import ArcFaceLoss, SoftmaxLoss
from .pairwise import BatchAllTripletLoss, MarginGradedTripletLoss, MultiSimilarityLoss, NTXentLoss
from .tuples import CosinePairLoss, graded_triplet_loss, info_nce_loss

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
    "cosine_matrix",
    "pair_masks",
    "zero_loss",
    "info_nce_loss",
    "graded_triplet_loss",
]
