"""Time of P@1 + MAP@R: spacy_rhetoric.evaluation.metrics.retrieval_scores against
pytorch-metric-learning's AccuracyCalculator (same figures, checked in
tests/test_evaluation.py) on random vectors, one thread each.

    OMP_NUM_THREADS=1 python benchmarks/encoder/bench_retrieval.py [--n 5000] [--dim 384] [--labels 5] [--repeats 3]
"""
import argparse
import time

import numpy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--labels", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    from spacy_rhetoric.evaluation.metrics import l2_normalize, retrieval_scores

    torch.set_num_threads(1)
    rng = numpy.random.default_rng(0)
    X = rng.normal(size=(args.n, args.dim)).astype("float32")
    y = rng.integers(0, args.labels, size=args.n)
    calc = AccuracyCalculator(include=("precision_at_1", "mean_average_precision_at_r"),
                              device=torch.device("cpu"))
    times = {"spacy_rhetoric": [], "pytorch-metric-learning": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        ours = retrieval_scores(X, [str(v) for v in y])
        times["spacy_rhetoric"].append(time.perf_counter() - start)
        start = time.perf_counter()
        pml = calc.get_accuracy(torch.from_numpy(l2_normalize(X)), torch.from_numpy(y))
        times["pytorch-metric-learning"].append(time.perf_counter() - start)
    print(f"{args.n} x {args.dim} vectors, {args.labels} labels, best of {args.repeats}")
    print(f"  spacy_rhetoric           P@1 {ours['p_at_1']:.4f} MAP@R {ours['map_at_r']:.4f}  "
          f"{min(times['spacy_rhetoric']):.2f} s")
    print(f"  pytorch-metric-learning  P@1 {pml['precision_at_1']:.4f} "
          f"MAP@R {pml['mean_average_precision_at_r']:.4f}  {min(times['pytorch-metric-learning']):.2f} s")


if __name__ == "__main__":
    main()
