"""spacy_rhetoric.losses against pytorch-metric-learning (PML): same
embeddings, labels, class weights and hyper-parameters give the same loss and
the same gradients (float64, tolerance 1e-9 relative on the value).

Conventions mapped here (see the losses module docstring):

* ArcFace: PML's margin is in degrees and its class weights ``W`` are
  [width, n_classes] (ours: ``weight`` [n_classes, width]), so ours is copied
  transposed into PML's.
* Multi-similarity: PML's loss has no mining; Wang et al.'s mining is PML's
  ``MultiSimilarityMiner(epsilon)`` passed as the indices; ``base`` is lambda.
* NT-Xent: PML builds all positive / negative pairs from the labels (both
  orders of each positive pair, as ours).
* Batch-all triplet: PML's ``TripletMarginLoss`` (all triplets per anchor,
  averaged over the triplets with a positive hinge) with ``LpDistance``
  (``power=2`` for squared distances).

Differences on purpose are tested as such: PML's ArcFace has a NaN gradient
for an embedding that lies exactly on its class weight (acos at 1); PML's
pair losses return 0 when mining leaves at most one positive and one
negative pair, ours keeps that anchor's terms.
"""
import math

import pytest
import torch

from spacy_rhetoric import losses as L

pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_miners = pytest.importorskip("pytorch_metric_learning.miners")
pml_distances = pytest.importorskip("pytorch_metric_learning.distances")


def make_batch(kind):
    """24 x 8 float64 embeddings of 4 labels; "clustered" puts each label
    around its own centre, so that multi-similarity mining keeps some pairs
    and drops others."""
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(24) % 4
    x = torch.randn(24, 8, dtype=torch.float64, generator=gen)
    if kind == "clustered":
        centres = torch.randn(4, 8, dtype=torch.float64, generator=gen)
        x = centres[y] + x
    return x, y


@pytest.fixture(params=["spread", "clustered"])
def batch(request):
    return make_batch(request.param)


def value_and_grad(fn, x, *params):
    """fn(x) and its gradients with respect to x and params."""
    x = x.clone().requires_grad_(True)
    for p in params:
        p.grad = None
    value = fn(x)
    value.backward()
    return value.item(), x.grad, [p.grad for p in params]


def assert_same(ours, theirs):
    assert ours[0] == pytest.approx(theirs[0], rel=1e-9, abs=1e-12)
    torch.testing.assert_close(ours[1], theirs[1], rtol=1e-7, atol=1e-12)


def arcface_pair(margin, scale, n_classes, width):
    ours = L.ArcFaceLoss(margin=margin, scale=scale)
    torch.manual_seed(0)
    ours.initialize(n_classes, width)
    ours.double()
    theirs = pml_losses.ArcFaceLoss(n_classes, width, margin=math.degrees(margin), scale=scale).double()
    with torch.no_grad():
        theirs.W.copy_(ours.weight.t())
    return ours, theirs


@pytest.mark.parametrize("margin,scale", [(0.5, 16.0), (0.2, 64.0)])
def test_arcface_matches_pml(batch, margin, scale):
    x, y = batch
    ours, theirs = arcface_pair(margin, scale, 4, 8)
    a = value_and_grad(lambda e: ours(e, y), x, ours.weight)
    b = value_and_grad(lambda e: theirs(e, y), x, theirs.W)
    assert_same(a, b)
    torch.testing.assert_close(a[2][0], b[2][0].t(), rtol=1e-7, atol=1e-12)


def test_arcface_matches_pml_beyond_pi_minus_margin():
    # embeddings close to the opposite of their class weight: theta + m > pi,
    # where both use the monotonic fallback cos(theta) - m sin(m)
    ours, theirs = arcface_pair(0.5, 16.0, 3, 4)
    gen = torch.Generator().manual_seed(1)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    x = -ours.weight.detach()[y] + 0.05 * torch.randn(6, 4, dtype=torch.float64, generator=gen)
    assert_same(value_and_grad(lambda e: ours(e, y), x), value_and_grad(lambda e: theirs(e, y), x))


def test_arcface_on_the_class_weight_differs_on_purpose():
    # PML differentiates acos at cos = 1 (NaN); ours uses cos(theta + m) =
    # cos cos m - sin sin m with the sine clamped at sqrt(float eps): finite
    # gradient, and a target logit that differs by at most s sin(m) 3.5e-4
    # (float32)
    ours, theirs = arcface_pair(0.5, 16.0, 3, 4)
    ours.float(), theirs.float()
    y = torch.tensor([0, 1])
    x = ours.weight.detach()[y]
    value_ours, grad_ours, _ = value_and_grad(lambda e: ours(e, y), x)
    value_pml, grad_pml, _ = value_and_grad(lambda e: theirs(e, y), x)
    assert value_ours == pytest.approx(value_pml, abs=16 * math.sin(0.5) * 3.5e-4)
    assert torch.isfinite(grad_ours).all() and not torch.isfinite(grad_pml).all()


@pytest.mark.parametrize("epsilon", [0.1, 0.5, None])
def test_multi_similarity_matches_pml(batch, epsilon):
    x, y = batch
    ours = L.MultiSimilarityLoss(alpha=2.0, beta=40.0, base=0.75, epsilon=epsilon)
    theirs = pml_losses.MultiSimilarityLoss(alpha=2.0, beta=40.0, base=0.75)
    miner = None if epsilon is None else pml_miners.MultiSimilarityMiner(epsilon=epsilon)
    a = value_and_grad(lambda e: ours(e, y), x)
    b = value_and_grad(lambda e: theirs(e, y, miner(e, y) if miner else None), x)
    assert_same(a, b)


def test_clustered_batch_exercises_mining():
    x, y = make_batch("clustered")
    for epsilon in (0.1, 0.5):
        kept = L.MultiSimilarityLoss(epsilon=epsilon).mine(L.cosine_matrix(x), y)
        for mask, every in zip(kept, L.pair_masks(y)):
            assert 0 < int(mask.sum()) < int(every.sum())


def test_multi_similarity_single_mined_pair_differs_on_purpose():
    # anchor 0 keeps one positive (S=0.6) and one negative (S=0.8); anchor 1
    # keeps nothing (0.6 - 0.1 >= S12 = 0). PML returns 0 for a batch with at
    # most one positive and one negative pair; ours keeps anchor 0's terms
    x = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.8, -0.6]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1])
    ours = L.MultiSimilarityLoss(alpha=2.0, beta=40.0, base=0.75, epsilon=0.1)
    theirs = pml_losses.MultiSimilarityLoss(alpha=2.0, beta=40.0, base=0.75)
    miner = pml_miners.MultiSimilarityMiner(epsilon=0.1)
    expected = (math.log(1 + math.exp(-2.0 * (0.6 - 0.75))) / 2.0 + math.log(1 + math.exp(40.0 * (0.8 - 0.75))) / 40.0) / 3
    assert ours(x, y).item() == pytest.approx(expected, rel=1e-9)
    assert theirs(x, y, miner(x, y)).item() == 0.0


@pytest.mark.parametrize("temperature", [0.05, 0.1, 1.0])
def test_ntxent_matches_pml(batch, temperature):
    x, y = batch
    a = value_and_grad(lambda e: L.NTXentLoss(temperature)(e, y), x)
    b = value_and_grad(lambda e: pml_losses.NTXentLoss(temperature=temperature)(e, y), x)
    assert_same(a, b)


def test_ntxent_matches_pml_with_a_label_without_negatives():
    # a single-class batch: every pair has denominator = numerator (log 1 = 0)
    x = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    y = torch.zeros(5, dtype=torch.long)
    a = value_and_grad(lambda e: L.NTXentLoss(0.1)(e, y), x)
    b = value_and_grad(lambda e: pml_losses.NTXentLoss(temperature=0.1)(e, y), x)
    assert a[0] == b[0] == 0.0
    torch.testing.assert_close(a[1], b[1])


@pytest.mark.parametrize("margin,normalize,squared", [(0.05, True, False), (0.4, True, True), (5.0, False, False)])
def test_batch_all_triplet_matches_pml(batch, margin, normalize, squared):
    x, y = batch
    ours = L.BatchAllTripletLoss(margin=margin, normalize=normalize, squared=squared)
    distance = pml_distances.LpDistance(normalize_embeddings=normalize, power=2 if squared else 1)
    theirs = pml_losses.TripletMarginLoss(margin=margin, distance=distance, triplets_per_anchor="all")
    assert_same(value_and_grad(lambda e: ours(e, y), x), value_and_grad(lambda e: theirs(e, y), x))
