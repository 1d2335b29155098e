"""spacy_rhetoric.losses: every loss against a hand-computed value (explicit
numbers for tiny cases, plus plain-Python loops over pairs/triplets that
follow the papers' formulas), numerical gradients, degenerate batches, and
registry construction."""
import math
from itertools import product

import numpy
import pytest
import torch
from helpers import entry_point_names, resolve_config
from spacy.util import registry

from spacy_rhetoric import losses as L

# float(loss) on a tensor that requires grad is how the tests read values
pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")

METRIC_LOSSES = [
    "spacy_rhetoric.SoftmaxLoss.v1",
    "spacy_rhetoric.BatchAllTripletLoss.v1",
    "spacy_rhetoric.ArcFaceLoss.v1",
    "spacy_rhetoric.MultiSimilarityLoss.v1",
    "spacy_rhetoric.NTXentLoss.v1",
    "spacy_rhetoric.MarginGradedTripletLoss.v1",
]


def make(name, **kwargs):
    return registry.misc.get(name)(**kwargs)


def t(x, dtype=torch.float64, grad=False):
    return torch.tensor(x, dtype=dtype, requires_grad=grad)


def unit(v):
    v = numpy.asarray(v, dtype="float64")
    return v / numpy.linalg.norm(v)


@pytest.fixture
def batch():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(9, 4, dtype=torch.float64, generator=gen)
    y = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    return x, y


# ---------------------------------------------------------------------------
# plain-Python references (written from the formulas, not from the module)
# ---------------------------------------------------------------------------


def ref_triplet(x, y, margin, normalize=True, squared=False, margin_fn=None, valid_fn=None):
    x = numpy.asarray(x, dtype="float64")
    if normalize:
        x = x / numpy.linalg.norm(x, axis=1, keepdims=True)
    n = len(y)

    def d(i, j):
        v = float(numpy.sum((x[i] - x[j]) ** 2))
        return v if squared else math.sqrt(v)

    total, active = 0.0, 0
    for a, p, q in product(range(n), repeat=3):
        if valid_fn is None:
            ok = a != p and y[a] == y[p] and y[a] != y[q]
        else:
            ok = valid_fn(a, p, q)
        if not ok:
            continue
        m = margin if margin_fn is None else margin_fn(a, p, q)
        h = max(d(a, p) - d(a, q) + m, 0.0)
        if h > 0:
            total += h
            active += 1
    return total / active if active else 0.0


def ref_levels(y, group):
    """CoSaEmb relation level of (i, j): 3 itself, 2 same label, 1 same group
    (``group``: label -> group name), 0 otherwise."""

    def level(i, j):
        if i == j:
            return 3
        if y[i] == y[j]:
            return 2
        return 1 if group[int(y[i])] == group[int(y[j])] else 0

    return level


def cos_matrix(x):
    x = numpy.asarray(x, dtype="float64")
    x = x / numpy.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T


def ref_ms(x, y, alpha, beta, lam, eps):
    """Wang et al. (2019) reference procedure, anchor by anchor."""
    s = cos_matrix(x)
    n = len(y)
    total = 0.0
    for i in range(n):
        pos = [s[i, j] for j in range(n) if j != i and y[j] == y[i]]
        neg = [s[i, k] for k in range(n) if y[k] != y[i]]
        if not pos or not neg:
            continue
        if eps is not None:
            neg_kept = [v for v in neg if v + eps > min(pos)]
            pos_kept = [v for v in pos if v - eps < max(neg)]
            if not neg_kept or not pos_kept:
                continue
        else:
            neg_kept, pos_kept = neg, pos
        total += 1 / alpha * math.log(1 + sum(math.exp(-alpha * (v - lam)) for v in pos_kept))
        total += 1 / beta * math.log(1 + sum(math.exp(beta * (v - lam)) for v in neg_kept))
    return total / n


def ref_ntxent(x, y, temp):
    s = cos_matrix(x) / temp
    n = len(y)
    terms = []
    for i, j in product(range(n), repeat=2):
        if i == j or y[i] != y[j]:
            continue
        denom = math.exp(s[i, j]) + sum(math.exp(s[i, k]) for k in range(n) if y[k] != y[i])
        terms.append(-math.log(math.exp(s[i, j]) / denom))
    return sum(terms) / len(terms) if terms else 0.0


# ---------------------------------------------------------------------------
# softmax cross-entropy
# ---------------------------------------------------------------------------


def test_softmax_hand_computed():
    loss = make("spacy_rhetoric.SoftmaxLoss.v1")
    assert loss.needs_classes
    loss.initialize(2, 2)
    with torch.no_grad():
        loss.linear.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        loss.linear.bias.copy_(torch.tensor([0.0, 0.5]))
    x = t([[1.0, 0.0], [0.0, 2.0]])
    y = torch.tensor([0, 0])
    # logits: [1, 0.5] and [0, 2.5]; -log softmax[0]
    expected = (math.log(1 + math.exp(-0.5)) + math.log(1 + math.exp(2.5))) / 2
    assert loss(x, y).item() == pytest.approx(expected, rel=1e-6)


def test_softmax_requires_initialize_and_valid_labels():
    loss = make("spacy_rhetoric.SoftmaxLoss.v1")
    with pytest.raises(ValueError, match="initialize"):
        loss(t([[1.0, 0.0]]), torch.tensor([0]))
    loss.initialize(2, 2)
    with pytest.raises(ValueError, match="label ids"):
        loss(t([[1.0, 0.0]]), torch.tensor([2]))
    with pytest.raises(ValueError, match="width"):
        loss(t([[1.0, 0.0, 0.0]]), torch.tensor([0]))


# ---------------------------------------------------------------------------
# batch-all triplet
# ---------------------------------------------------------------------------


def test_batch_all_triplet_hand_computed():
    # unit vectors; labels [0, 0, 1]
    x = t([[1.0, 0.0], [0.6, 0.8], [0.8, 0.6]])
    y = torch.tensor([0, 0, 1])
    loss = make("spacy_rhetoric.BatchAllTripletLoss.v1")
    assert loss.margin == 0.05
    # triplets (a=0,p=1,n=2) and (a=1,p=0,n=2)
    d01, d02, d12 = math.sqrt(0.8), math.sqrt(0.4), math.sqrt(0.08)
    expected = ((d01 - d02 + 0.05) + (d01 - d12 + 0.05)) / 2
    assert float(loss(x, y)) == pytest.approx(expected, rel=1e-9)


def test_batch_all_triplet_averages_over_active_triplets_only():
    # a=0,p=1 close; n=2 far (inactive); n=3 close to a (active)
    x = t([[1.0, 0.0], [0.8, 0.6], [-1.0, 0.0], [0.6, 0.8]])
    y = torch.tensor([0, 0, 1, 1])
    loss = L.BatchAllTripletLoss(margin=0.1)
    value = float(loss(x, y))
    assert value == pytest.approx(ref_triplet(x, y.tolist(), 0.1), rel=1e-9)
    # the sum of active hinges divided by their count, not by all 8 triplets
    x_np = x.numpy()
    dist = lambda i, j: numpy.linalg.norm(x_np[i] - x_np[j])  # noqa: E731
    hinges = [
        max(dist(a, p) - dist(a, n) + 0.1, 0)
        for a, p, n in product(range(4), repeat=3)
        if a != p and y[a] == y[p] and y[a] != y[n]
    ]
    assert len(hinges) == 8 and 0 < sum(h > 0 for h in hinges) < 8
    assert value == pytest.approx(sum(hinges) / sum(h > 0 for h in hinges), rel=1e-9)


def test_batch_all_triplet_ties_are_not_active():
    # margin 0: hinges that are exactly 0 (ties) are not counted in the average
    x = t([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    y = torch.tensor([0, 0, 1, 1])
    # active: (a=2, p=3, n=0) and (a=2, p=3, n=1), each sqrt(2) - 0; the rest are 0 or negative
    assert float(L.BatchAllTripletLoss(margin=0.0)(x, y)) == pytest.approx(math.sqrt(2), rel=1e-9)


def test_batch_all_triplet_matches_reference_loop(batch):
    x, y = batch
    for margin, normalize, squared in [(0.05, True, False), (0.4, True, True), (5.0, False, False)]:
        loss = L.BatchAllTripletLoss(margin=margin, normalize=normalize, squared=squared)
        expected = ref_triplet(x, y.tolist(), margin, normalize=normalize, squared=squared)
        assert float(loss(x, y)) == pytest.approx(expected, rel=1e-8)


def test_pairwise_distances_identical_rows_have_finite_gradient():
    x = t([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]], grad=True)
    d = L.pairwise_distances(x)
    assert float(d[0, 1].detach()) == 0.0 and float(d[0, 0].detach()) == 0.0
    assert float(d[0, 2].detach()) == pytest.approx(math.sqrt(2))
    d.sum().backward()
    assert torch.isfinite(x.grad).all()


# ---------------------------------------------------------------------------
# ArcFace
# ---------------------------------------------------------------------------


def _arcface_2d(margin=0.5, scale=16.0):
    loss = make("spacy_rhetoric.ArcFaceLoss.v1", margin=margin, scale=scale)
    loss.initialize(2, 2)
    with torch.no_grad():
        loss.weight.copy_(torch.tensor([[2.0, 0.0], [0.0, 3.0]]))  # normalised inside
    return loss


def test_arcface_hand_computed():
    loss = _arcface_2d()
    assert loss.needs_classes and (loss.margin, loss.scale) == (0.5, 16.0)
    angle = 0.3
    x = t([[5 * math.cos(angle), 5 * math.sin(angle)]])  # norm 5: normalised inside
    y = torch.tensor([0])
    # theta_0 = 0.3, theta_1 = pi/2 - 0.3; target logit s*cos(0.3 + 0.5)
    target = 16 * math.cos(0.8)
    other = 16 * math.cos(math.pi / 2 - 0.3)
    expected = -math.log(math.exp(target) / (math.exp(target) + math.exp(other)))
    assert float(loss(x, y)) == pytest.approx(expected, rel=1e-9)
    # label 1: theta_1 = pi/2 - 0.3 gets the margin
    target = 16 * math.cos(math.pi / 2 - 0.3 + 0.5)
    other = 16 * math.cos(0.3)
    expected = -math.log(math.exp(target) / (math.exp(target) + math.exp(other)))
    assert float(loss(x, torch.tensor([1]))) == pytest.approx(expected, rel=1e-9)


def test_arcface_beyond_pi_uses_monotonic_fallback():
    loss = _arcface_2d(margin=0.5, scale=2.0)
    theta = math.pi - 0.2  # theta + m > pi
    x = t([[math.cos(theta), math.sin(theta)]])
    cos0, cos1 = math.cos(theta), math.cos(math.pi / 2 - theta)
    target = 2.0 * (cos0 - 0.5 * math.sin(0.5))
    expected = -math.log(math.exp(target) / (math.exp(target) + math.exp(2.0 * cos1)))
    assert float(loss(x, torch.tensor([0]))) == pytest.approx(expected, rel=1e-9)


# ---------------------------------------------------------------------------
# multi-similarity
# ---------------------------------------------------------------------------


def test_multi_similarity_hand_computed_without_mining():
    # cosines: S01 = 0.6 (positive pair), S02 = 0.8, S12 = 0.96 (negatives)
    x = t([[1.0, 0.0], [0.6, 0.8], [0.8, 0.6]])
    y = torch.tensor([0, 0, 1])
    loss = make("spacy_rhetoric.MultiSimilarityLoss.v1", epsilon=None)
    a, b, lam = 2.0, 40.0, 0.75
    assert (loss.alpha, loss.beta, loss.base) == (a, b, lam)
    pos = lambda s: math.log(1 + math.exp(-a * (s - lam))) / a  # noqa: E731
    neg = lambda ss: math.log(1 + sum(math.exp(b * (s - lam)) for s in ss)) / b  # noqa: E731
    expected = (
        pos(0.6) + neg([0.8])  # anchor 0
        + pos(0.6) + neg([0.96])  # anchor 1
        + 0.0 + neg([0.8, 0.96])  # anchor 2: no positive pair
    ) / 3
    assert float(loss(x, y)) == pytest.approx(expected, rel=1e-9)


def test_multi_similarity_mining_hand_computed():
    # anchor 0: positives S=0.9 (x1), S=0.0 (x2); negative S=0.2 (x3)
    x = t([[1.0, 0.0], [0.9, math.sqrt(1 - 0.81)], [0.0, 1.0], [0.2, -math.sqrt(1 - 0.04)]])
    y = torch.tensor([0, 0, 0, 1])
    loss = L.MultiSimilarityLoss(alpha=2.0, beta=40.0, base=0.5, epsilon=0.1)
    pos_kept, neg_kept = loss.mine(L.cosine_matrix(x), y)
    # anchor 0: negative 0.2 kept (0.2 + 0.1 > min pos 0.0); positive 0.9 dropped
    # (0.9 - 0.1 >= max neg 0.2), positive 0.0 kept
    assert pos_kept[0].tolist() == [False, False, True, False]
    assert neg_kept[0].tolist() == [False, False, False, True]
    assert float(loss(x, y)) == pytest.approx(ref_ms(x, y.tolist(), 2.0, 40.0, 0.5, 0.1), rel=1e-9)


def test_multi_similarity_matches_reference_loop(batch):
    x, y = batch
    for eps in (0.1, 0.5, None):
        loss = L.MultiSimilarityLoss(alpha=2, beta=40, base=0.75, epsilon=eps)
        assert float(loss(x, y)) == pytest.approx(ref_ms(x, y.tolist(), 2, 40, 0.75, eps), rel=1e-8)


# ---------------------------------------------------------------------------
# NT-Xent
# ---------------------------------------------------------------------------


def test_ntxent_hand_computed():
    x = t([[1.0, 0.0], [0.6, 0.8], [0.8, 0.6]])
    y = torch.tensor([0, 0, 1])
    loss = make("spacy_rhetoric.NTXentLoss.v1")
    assert loss.temperature == 0.1
    # pairs (0,1) and (1,0); S01 = 0.6, negatives: S02 = 0.8, S12 = 0.96
    e = math.exp
    l01 = -math.log(e(6) / (e(6) + e(8)))
    l10 = -math.log(e(6) / (e(6) + e(9.6)))
    assert float(loss(x, y)) == pytest.approx((l01 + l10) / 2, rel=1e-9)


def test_ntxent_matches_reference_loop(batch):
    x, y = batch
    for temp in (0.05, 0.1, 1.0):
        assert float(L.NTXentLoss(temp)(x, y)) == pytest.approx(ref_ntxent(x, y.tolist(), temp), rel=1e-8)


def test_ntxent_small_temperature_float32_is_finite():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(16, 8, generator=gen, requires_grad=True)
    y = torch.arange(16) % 4
    value = L.NTXentLoss(0.0125)(x, y)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(x.grad).all()


# ---------------------------------------------------------------------------
# margin-graded triplet
# ---------------------------------------------------------------------------


def test_margin_graded_hand_computed_without_groups():
    # 1-d points; labels [0, 0, 1]; squared distances, raw embeddings
    x = t([[0.0], [1.0], [1.5]])
    y = torch.tensor([0, 0, 1])
    loss = make("spacy_rhetoric.MarginGradedTripletLoss.v1")
    # (a=0,p=1,n=2): 1 - 2.25 + 3 = 1.75; (a=1,p=0,n=2): 1 - 0.25 + 3 = 3.75
    assert float(loss(x, y)) == pytest.approx((1.75 + 3.75) / 2, rel=1e-9)


def test_margin_graded_group_ladder_hand_computed():
    # labels: 0 "bg", 1 "obj" (group intro), 2 "method" (own group)
    x = t([[0.0], [0.5], [1.0], [1.6]])
    y = torch.tensor([0, 0, 1, 2])
    loss = L.MarginGradedTripletLoss(
        label_margin=3.0, group_margin=1.0, groups={"intro": ["bg", "obj"]}, labels=["bg", "obj", "method"]
    )
    sq = lambda i, j: (float(x[i, 0]) - float(x[j, 0])) ** 2  # noqa: E731
    hinges = []
    # same label vs same group (margin 3 - 1 = 2) and same label vs other group (margin 3)
    for a, p in [(0, 1), (1, 0)]:
        hinges.append(sq(a, p) - sq(a, 2) + 2.0)
        hinges.append(sq(a, p) - sq(a, 3) + 3.0)
    # group positive vs other group (margin 1): anchors 0/1 with p=2, anchor 2 with p=0/1
    for a, p in [(0, 2), (1, 2), (2, 0), (2, 1)]:
        hinges.append(sq(a, p) - sq(a, 3) + 1.0)
    active = [h for h in hinges if h > 0]
    assert 0 < len(active) < len(hinges)
    assert hinges[4] < 0 and all(h > 0 for h in hinges[5:])  # group-positive triplets active
    assert float(loss(x, y)) == pytest.approx(sum(active) / len(active), rel=1e-9)

    # same through the generic reference loop
    level = ref_levels(y.tolist(), {0: "intro", 1: "intro", 2: "method"})
    ladder = {2: 3.0, 1: 1.0, 0: 0.0}
    expected = ref_triplet(
        x, y.tolist(), None, normalize=False, squared=True,
        valid_fn=lambda a, p, n: 3 > level(a, p) > level(a, n),
        margin_fn=lambda a, p, n: ladder[level(a, p)] - ladder[level(a, n)],
    )
    assert float(loss(x, y)) == pytest.approx(expected, rel=1e-9)


def test_margin_graded_pair_margins_and_set_labels():
    x = t([[0.0], [1.0], [1.5], [4.0]])
    y = torch.tensor([0, 0, 1, 2])
    loss = L.MarginGradedTripletLoss(label_margin=3.0, pair_margins={"a|b": 0.5})
    with pytest.raises(ValueError, match="set_labels"):
        loss(x, y)
    loss.set_labels(["a", "b", "c"])
    sq = lambda i, j: (float(x[i, 0]) - float(x[j, 0])) ** 2  # noqa: E731
    hinges = [
        sq(0, 1) - sq(0, 2) + 0.5, sq(0, 1) - sq(0, 3) + 3.0,
        sq(1, 0) - sq(1, 2) + 0.5, sq(1, 0) - sq(1, 3) + 3.0,
    ]
    active = [h for h in hinges if h > 0]
    assert float(loss(x, y)) == pytest.approx(sum(active) / len(active), rel=1e-9)
    # integer ids and the list form work without names
    loss2 = L.MarginGradedTripletLoss(label_margin=3.0, pair_margins=[[0, 1, 0.5]])
    assert float(loss2(x, y)) == pytest.approx(float(loss(x, y)), rel=1e-12)


def test_margin_graded_rejects_bad_config():
    with pytest.raises(ValueError):
        L.MarginGradedTripletLoss(label_margin=1.0, group_margin=2.0)
    with pytest.raises(ValueError, match="A\\|B"):
        L.MarginGradedTripletLoss(pair_margins={"ab": 1.0})


# ---------------------------------------------------------------------------
# cosine pair
# ---------------------------------------------------------------------------


def test_cosine_pair_hand_computed():
    loss = make("spacy_rhetoric.CosinePairLoss.v1")
    assert not isinstance(loss, L.MetricLoss)
    a = t([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    b = t([[0.0, 3.0], [2.0, 2.0], [1.0, 1.0]])
    scores = t([0.5, 1.0, 0.0])
    # cosines 0, 1, 1/sqrt(2)
    expected = ((0 - 0.5) ** 2 + 0.0 + (1 / math.sqrt(2)) ** 2) / 3
    assert float(loss(a, b, scores)) == pytest.approx(expected, rel=1e-9)
    with pytest.raises(ValueError):
        loss(a, b[:2], scores)
    with pytest.raises(ValueError):
        loss(a, b, scores[:2])


# ---------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------


def _loss_for_gradcheck(name):
    if name == "spacy_rhetoric.MarginGradedTripletLoss.v1":
        loss = L.MarginGradedTripletLoss(groups={"g": [0, 1]})
    elif name == "spacy_rhetoric.NTXentLoss.v1":
        loss = L.NTXentLoss(0.5)
    else:
        loss = make(name)
    loss.initialize(3, 4)
    return loss.double()


@pytest.mark.parametrize("name", METRIC_LOSSES)
def test_gradcheck(name, batch):
    x, y = batch
    x = x.clone().requires_grad_(True)
    loss = _loss_for_gradcheck(name)
    assert float(loss(x, y)) > 0
    assert torch.autograd.gradcheck(lambda e: loss(e, y), (x,), eps=1e-6, atol=1e-5)


def test_gradcheck_class_weights():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(6, 4, dtype=torch.float64, generator=gen)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    for loss in (L.SoftmaxLoss(), L.ArcFaceLoss(0.3, 4.0)):
        loss.initialize(3, 4)
        loss.double()
        # functional check through torch.func to differentiate w.r.t. the weights
        names = [n for n, _ in loss.named_parameters()]
        values = tuple(p.detach().clone().requires_grad_(True) for p in loss.parameters())
        fn = lambda *ws: torch.func.functional_call(loss, dict(zip(names, ws)), (x, y))  # noqa: E731
        assert torch.autograd.gradcheck(fn, values, eps=1e-6, atol=1e-5)


def test_gradcheck_cosine_pair():
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    s = torch.rand(5, dtype=torch.float64, generator=gen)
    loss = L.CosinePairLoss()
    assert torch.autograd.gradcheck(lambda u, v: loss(u, v, s), (a, b), eps=1e-6, atol=1e-5)


# ---------------------------------------------------------------------------
# degenerate batches
# ---------------------------------------------------------------------------

PAIR_BASED = [n for n in METRIC_LOSSES if n not in ("spacy_rhetoric.SoftmaxLoss.v1", "spacy_rhetoric.ArcFaceLoss.v1")]


@pytest.mark.parametrize("name", PAIR_BASED)
@pytest.mark.parametrize(
    "labels", [[0, 0, 0, 0], [0, 1, 2, 3], [0], []], ids=["single-class", "no-positive", "one", "empty"]
)
def test_degenerate_batches_give_zero_with_gradient(name, labels):
    x = torch.randn(len(labels), 4, requires_grad=True)
    loss = make(name)
    loss.initialize(4, 4)
    value = loss(x, torch.tensor(labels, dtype=torch.long))
    assert value.dim() == 0 and float(value) == 0.0
    assert value.requires_grad
    value.backward()
    assert x.grad is not None and torch.isfinite(x.grad).all() and float(x.grad.abs().sum()) == 0.0


def test_identical_embeddings_no_nan():
    x = torch.ones(6, 4, requires_grad=True)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    for name in METRIC_LOSSES:
        loss = make(name)
        loss.initialize(3, 4)
        value = loss(x, y)
        value.backward()
        assert torch.isfinite(value), name
        assert torch.isfinite(x.grad).all(), name
        x.grad = None


@pytest.mark.parametrize("name", ["spacy_rhetoric.SoftmaxLoss.v1", "spacy_rhetoric.ArcFaceLoss.v1"])
def test_class_losses_single_class_and_empty(name):
    loss = make(name)
    loss.initialize(3, 4)
    x = torch.randn(4, 4, requires_grad=True)
    value = loss(x, torch.zeros(4, dtype=torch.long))
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(x.grad).all()
    empty = torch.zeros(0, 4, requires_grad=True)
    value = loss(empty, torch.zeros(0, dtype=torch.long))
    assert float(value) == 0.0
    value.backward()


def test_cosine_pair_empty_and_zero_vectors():
    loss = L.CosinePairLoss()
    a = torch.zeros(0, 3, requires_grad=True)
    value = loss(a, torch.zeros(0, 3), torch.zeros(0))
    assert float(value) == 0.0
    value.backward()
    z = torch.zeros(2, 3, requires_grad=True)
    value = loss(z, torch.ones(2, 3), torch.tensor([0.0, 1.0]))
    assert float(value) == pytest.approx(0.5)
    value.backward()
    assert torch.isfinite(z.grad).all()


def test_input_validation():
    loss = L.NTXentLoss()
    with pytest.raises(ValueError, match="2-d"):
        loss(torch.zeros(3), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="one label per embedding"):
        loss(torch.zeros(3, 2), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="integer"):
        loss(torch.zeros(3, 2), torch.zeros(3))


# ---------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------


def test_registry_defaults_are_the_papers():
    assert make("spacy_rhetoric.BatchAllTripletLoss.v1").margin == 0.05
    arc = make("spacy_rhetoric.ArcFaceLoss.v1")
    assert (arc.margin, arc.scale) == (0.5, 16.0)
    ms = make("spacy_rhetoric.MultiSimilarityLoss.v1")
    assert (ms.alpha, ms.beta, ms.base, ms.epsilon) == (2.0, 40.0, 0.75, 0.1)
    assert make("spacy_rhetoric.NTXentLoss.v1").temperature == 0.1
    mg = make("spacy_rhetoric.MarginGradedTripletLoss.v1")
    assert (mg.label_margin, mg.group_margin) == (3.0, 1.0)


@pytest.mark.parametrize("name", METRIC_LOSSES + ["spacy_rhetoric.CosinePairLoss.v1"])
def test_registry_returns_new_modules(name):
    a, b = make(name), make(name)
    assert isinstance(a, torch.nn.Module) and a is not b
    if name != "spacy_rhetoric.CosinePairLoss.v1":
        assert isinstance(a, L.MetricLoss)
        assert a.needs_classes == (name in ("spacy_rhetoric.SoftmaxLoss.v1", "spacy_rhetoric.ArcFaceLoss.v1"))


def test_registry_from_config():
    resolved = resolve_config(
        """
        [loss]
        @misc = "spacy_rhetoric.MarginGradedTripletLoss.v1"
        label_margin = 2.0
        group_margin = 0.5
        labels = ["bg", "obj", "method"]

        [loss.groups]
        intro = ["bg", "obj"]

        [arc]
        @misc = "spacy_rhetoric.ArcFaceLoss.v1"
        margin = 0.3
        scale = 32
        """
    )
    mg, arc = resolved["loss"], resolved["arc"]
    assert isinstance(mg, L.MarginGradedTripletLoss) and mg.groups == {"intro": ["bg", "obj"]}
    group, table = mg.class_tables(3)
    assert group[0] == group[1] != group[2]
    assert table[0, 1] == pytest.approx(1.5) and table[0, 2] == pytest.approx(2.0)
    assert isinstance(arc, L.ArcFaceLoss) and (arc.margin, arc.scale) == (0.3, 32.0)


def test_entry_points_registered():
    names = entry_point_names("spacy_misc")
    for name in METRIC_LOSSES + ["spacy_rhetoric.CosinePairLoss.v1"]:
        assert name in names


def test_state_dict_round_trip():
    loss = L.ArcFaceLoss()
    loss.initialize(3, 4)
    other = L.ArcFaceLoss()
    other.initialize(3, 4)
    other.load_state_dict(loss.state_dict())
    x = torch.randn(5, 4)
    y = torch.tensor([0, 1, 2, 0, 1])
    assert float(other(x, y)) == float(loss(x, y))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_triplet_losses_sorted_sum_equals_reference_loop(seed):
    """The per-anchor sorted sums equal the plain loop over all triplets,
    also with duplicate points (ties) and several groups."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(14, 3, dtype=torch.float64, generator=gen)
    x[5] = x[4]  # a duplicate (same label)
    x[9] = x[2]  # a duplicate (different label)
    y = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4, 0])
    for margin in (0.05, 0.3, 1.5):
        expected = ref_triplet(x, y.tolist(), margin)
        assert float(L.BatchAllTripletLoss(margin)(x, y)) == pytest.approx(expected, rel=1e-9)
    groups = {"g1": [0, 1], "g2": [2, 3]}
    level = ref_levels(y.tolist(), {0: "g1", 1: "g1", 2: "g2", 3: "g2", 4: "own"})
    pair = {(0, 2): 0.7, (2, 0): 0.7, (1, 0): 2.5, (0, 1): 2.5}  # symmetric unless both given

    def margin(a, p, n):
        ladder = {2: 2.0, 1: 0.5, 0: 0.0}
        if level(a, p) == 2 and (int(y[a]), int(y[n])) in pair:
            return pair[int(y[a]), int(y[n])]
        return ladder[level(a, p)] - ladder[level(a, n)]

    graded = L.MarginGradedTripletLoss(
        label_margin=2.0, group_margin=0.5, groups=groups, pair_margins=[[0, 2, 0.7], [1, 0, 2.5]]
    )
    expected = ref_triplet(
        x, y.tolist(), None, normalize=False, squared=True,
        valid_fn=lambda a, p, n: 3 > level(a, p) > level(a, n), margin_fn=margin,
    )
    assert float(graded(x, y)) == pytest.approx(expected, rel=1e-9)
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda e: graded(e, y), (x,), eps=1e-6, atol=1e-5)
