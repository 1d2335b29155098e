"""Forward + backward steps of one metric loss, spacy_rhetoric's or pytorch-metric-learning's.

    python benchmarks/encoder/bench_losses.py LOSS --impl ours|pml [--steps 500] [--batch 64] [--width 384]

LOSS: arcface, multi_similarity, ntxent, triplet. The batch is a fixed float32
[batch, width] tensor of P x K labels (K = 8, as the PK batcher gives the pair
losses; ArcFace gets the same labels and P classes). Both implementations get
the same hyper-parameters (spacy_rhetoric's defaults; PML's ArcFace margin in
degrees, its multi-similarity loss with ``MultiSimilarityMiner``) and are
checked to agree in tests/test_losses_pml.py. The script runs ``--steps``
forward + backward passes on one torch thread and exits; time the whole
process for two step counts (e.g. 0 and 500) and divide the difference by the
steps for the time of one step.
"""
import argparse
import math

import torch


def build(loss: str, impl: str, n_classes: int, width: int):
    """A callable (embeddings, labels) -> scalar loss and its parameters."""
    from spacy_rhetoric import losses as L

    if impl == "ours":
        module = {
            "arcface": L.ArcFaceLoss,
            "multi_similarity": L.MultiSimilarityLoss,
            "ntxent": L.NTXentLoss,
            "triplet": L.BatchAllTripletLoss,
        }[loss]()
        module.initialize(n_classes, width)
        return module, list(module.parameters())
    from pytorch_metric_learning import losses as PL
    from pytorch_metric_learning import miners as PM

    if loss == "arcface":
        module = PL.ArcFaceLoss(n_classes, width, margin=math.degrees(0.5), scale=16.0)
        return module, [module.W]
    if loss == "multi_similarity":
        module, miner = PL.MultiSimilarityLoss(alpha=2.0, beta=40.0, base=0.75), PM.MultiSimilarityMiner(0.1)
        return (lambda x, y: module(x, y, miner(x, y))), []
    if loss == "ntxent":
        return PL.NTXentLoss(temperature=0.1), []
    return PL.TripletMarginLoss(margin=0.05), []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("loss", choices=["arcface", "multi_similarity", "ntxent", "triplet"])
    parser.add_argument("--impl", choices=["ours", "pml"], required=True)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--k", type=int, default=8)
    args = parser.parse_args()

    torch.set_num_threads(1)
    n_classes = max(1, args.batch // args.k)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(args.batch, args.width, generator=gen).requires_grad_(True)
    y = torch.arange(args.batch) // args.k
    loss_fn, params = build(args.loss, args.impl, n_classes, args.width)
    for _ in range(args.steps):
        x.grad = None
        for p in params:
            p.grad = None
        loss_fn(x, y).backward()


if __name__ == "__main__":
    main()
