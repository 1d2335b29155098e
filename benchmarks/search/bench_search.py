"""Speed and recall of the sentence search index (spacy_rhetoric.search).

Index build time, ms/query with 1 thread (batches of 1 and of 100) and
recall@10 against exact search (IndexFlatIP), for the index types
``spacy_rhetoric.search`` builds (``make_index`` with the factory strings of
``index_factory_for``) at N vectors of the pipeline's dimension.

Vectors are SYNTHETIC and clustered (no corpus of 1M encoded sentences here):
``--clusters`` unit centres, 10 sub-centres each, points = centre +
0.6 * sub-centre offset + ``--noise`` * isotropic noise, L2-normalised.
Queries are fresh draws from the same mixture (not in the index).

    OMP_NUM_THREADS=1 python benchmarks/search/bench_search.py --n 1000000 --noise 1.5 \
        --configs flat ivfpq:32,64,128,256:10,20 --out benchmarks/search/results/search_1m_noise1.5.json

Configs: ``flat``; ``hnsw:M:ef1,ef2`` (``HNSW{M},Flat``, efConstruction 64);
``ivfpq:np1,np2:kf1,kf2`` (the ``index_type="ivfpq"`` factory: sqrt(n) lists,
4-bit fast-scan PQ, exact re-ranking of kf x k candidates; nprobe np). The
exact index is timed on ``--flat-queries`` queries only (its recall is 1).
Timings are wall-clock on one thread; on a shared machine they include the
other jobs' load.
"""
import argparse
import json
import platform
import time
from pathlib import Path

import faiss
import numpy

from spacy_rhetoric.search import HNSW_EF_CONSTRUCTION, index_factory_for, make_index, set_search_params


def clustered(n: int, dim: int, *, clusters: int, noise: float, rng) -> numpy.ndarray:
    centres = rng.standard_normal((clusters, dim)).astype("float32")
    centres /= numpy.linalg.norm(centres, axis=1, keepdims=True)
    subs = rng.standard_normal((clusters, 10, dim)).astype("float32") / numpy.sqrt(dim)  # |offset| ~ 1
    out = numpy.empty((n, dim), dtype="float32")
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        c = rng.integers(clusters, size=m)
        s = rng.integers(10, size=m)
        X = centres[c] + 0.6 * subs[c, s]
        X += noise * rng.standard_normal((m, dim)).astype("float32") / numpy.sqrt(dim)
        X /= numpy.linalg.norm(X, axis=1, keepdims=True)
        out[start:start + m] = X
    return out


def timed_search(index, Q: numpy.ndarray, k: int, batch: int, n_queries: int):
    Q = Q[:n_queries]
    ids = numpy.empty((len(Q), k), dtype="int64")
    start = time.perf_counter()
    for s in range(0, len(Q), batch):
        _, ids[s:s + batch] = index.search(Q[s:s + batch], k)
    return (time.perf_counter() - start) * 1000 / len(Q), ids


def recall_at_k(found: numpy.ndarray, truth: numpy.ndarray) -> float:
    k = truth.shape[1]
    return float(numpy.mean([len(set(f[:k]) & set(t)) / k for f, t in zip(found, truth)]))


def parse_config(text: str, n: int, dim: int):
    """``flat``, ``hnsw:M:ef1,ef2``, ``ivfpq:np1,np2`` (or ``ivfpq:np1,np2:kf1,kf2``)."""
    kind, *rest = text.split(":")
    if kind == "flat":
        return "Flat", [{}]
    if kind == "hnsw":
        m = int(rest[0]) if rest else 32
        efs = [int(e) for e in rest[1].split(",")] if len(rest) > 1 else [128]
        return f"HNSW{m},Flat", [{"efSearch": e} for e in efs]
    if kind == "ivfpq":
        factory, params = index_factory_for(n, "ivfpq", dim=dim)
        nprobes = [int(p) for p in rest[0].split(",")] if rest else [params["nprobe"]]
        kfs = [int(f) for f in rest[1].split(",")] if len(rest) > 1 else [params["k_factor_rf"]]
        return factory, [{"nprobe": p, "k_factor_rf": kf} for kf in kfs for p in nprobes]
    return text, [{}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--noise", type=float, default=0.8)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--single-queries", type=int, default=300, help="queries timed one at a time")
    parser.add_argument("--flat-queries", type=int, default=100, help="queries timed on the exact index")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", nargs="+", default=["flat", "hnsw:32:64,128", "ivfpq:32,64"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    rng = numpy.random.default_rng(args.seed)
    t0 = time.perf_counter()
    data = clustered(args.n + args.queries, args.dim, clusters=args.clusters, noise=args.noise, rng=rng)
    X, Q = data[:args.n], numpy.ascontiguousarray(data[args.n:])
    print(f"data: {args.n} x {args.dim} in {time.perf_counter() - t0:.1f}s", flush=True)
    exact = faiss.IndexFlatIP(args.dim)
    exact.add(X)
    t0 = time.perf_counter()
    _, truth = exact.search(Q, args.k)
    print(f"ground truth: {time.perf_counter() - t0:.1f}s", flush=True)
    rows = []
    for text in args.configs:
        factory, param_sets = parse_config(text, args.n, args.dim)
        t0 = time.perf_counter()
        index = exact if factory == "Flat" else make_index(X, factory, seed=args.seed)
        build = time.perf_counter() - t0 if factory != "Flat" else None
        if factory == "Flat":  # time the build of a fresh flat index too
            t0 = time.perf_counter()
            make_index(X, "Flat")
            build = time.perf_counter() - t0
        for params in param_sets:
            set_search_params(index, params)
            if factory == "Flat":  # exact: recall 1 by definition; time fewer queries (slow at 1M)
                ms1, _ = timed_search(index, Q, args.k, 1, args.flat_queries)
                ms100, _ = timed_search(index, Q, args.k, 100, args.flat_queries)
                found = truth
            else:
                ms1, _ = timed_search(index, Q, args.k, 1, args.single_queries)
                ms100, found = timed_search(index, Q, args.k, 100, len(Q))
            row = {"n": args.n, "dim": args.dim, "factory": factory, "params": params,
                   "build_s": round(build, 1), "ms_per_query_batch1": round(ms1, 3),
                   "ms_per_query_batch100": round(ms100, 3), "recall_at_10": round(recall_at_k(found, truth), 4)}
            if factory.startswith("HNSW"):
                row["efConstruction"] = HNSW_EF_CONSTRUCTION
            rows.append(row)
            print(json.dumps(row), flush=True)
        if index is not exact:
            del index
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        info = {"machine": platform.processor() or platform.machine(), "threads": 1,
                "date": time.strftime("%Y-%m-%d"), "faiss": faiss.__version__, "args": vars(args) | {"out": str(args.out)},
                "data": "synthetic clustered unit vectors", "rows": rows}
        args.out.write_text(json.dumps(info, indent=2) + "\n", encoding="utf8")


if __name__ == "__main__":
    main()
