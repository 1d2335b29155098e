"""Exact k-nearest-neighbour search, the one search behind the retrieval
metrics (``metrics.retrieval_scores``, ``metrics.same_group_recall``)
and functional alignment (``alignment.align_encoded``).

``metric="cosine"`` (``cosine_neighbours``): faiss ``IndexFlatIP`` on
L2-normalised vectors (an all-zero row stays zero), so the inner product is
the cosine. ``metric="euclidean"``: faiss ``IndexFlatL2`` on the raw vectors
(the score is minus the squared distance), for models trained on Euclidean
distances such as COSAEMB. Neighbours come by decreasing similarity; ties are
broken by the lower reference index, also when a tied group reaches past the
first ``k`` results (the search is widened until the tie is settled), so the
result does not depend on faiss' internal order.
"""
from typing import Optional, Tuple

import numpy

from ..errors import RhetoricError


def as_matrix(vectors) -> numpy.ndarray:
    """``vectors`` as a C-contiguous float32 ``[n, d]`` array; a clear error
    for another shape or for NaN/inf values."""
    X = numpy.asarray(vectors, dtype="float32")
    if X.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {X.shape}")
    if not numpy.all(numpy.isfinite(X)):
        bad = int((~numpy.isfinite(X)).any(axis=1).sum())
        raise RhetoricError(f"{bad} vector(s) contain NaN or inf values")
    return numpy.ascontiguousarray(X)


def l2_normalize(vectors) -> numpy.ndarray:
    """Row-wise L2 normalisation; all-zero rows stay zero."""
    X = as_matrix(vectors).copy()
    norms = numpy.linalg.norm(X, axis=1, keepdims=True)
    numpy.divide(X, norms, out=X, where=norms > 0)
    return X


METRICS = ("cosine", "euclidean")


def cosine_neighbours(
    queries, k: int, references=None, *, chunk_size: Optional[int] = None
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """``nearest_neighbours`` with the cosine."""
    return nearest_neighbours(queries, k, references, metric="cosine", chunk_size=chunk_size)


def nearest_neighbours(
    queries, k: int, references=None, *, metric: str = "cosine", chunk_size: Optional[int] = None
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The ``k`` nearest rows of ``references`` for every row of ``queries``
    under ``metric`` (see module doc): ``(indices, scores)``, both
    ``[n_queries, k]``, best first (highest cosine, or highest minus squared
    Euclidean distance), ties by the lower reference index.

    ``references=None`` is the leave-one-out search of a set against itself:
    every row's neighbours are the *other* rows. The query is removed by its
    id, not by its position in the results, so duplicates of it (which tie at
    similarity 1) are neither pushed out nor dropped in its place. ``k`` must
    be between 1 and the number of candidate rows (``n - 1`` for
    leave-one-out).
    """
    import faiss

    if metric not in METRICS:
        raise RhetoricError(f"unknown metric {metric!r}: expected one of {METRICS}")
    prepare = l2_normalize if metric == "cosine" else as_matrix
    Q = prepare(queries)
    leave_one_out = references is None
    R = Q if leave_one_out else prepare(references)
    if Q.shape[1] != R.shape[1]:
        raise RhetoricError(f"query vectors have {Q.shape[1]} dimensions but reference vectors {R.shape[1]}")
    n_ref = R.shape[0]
    candidates = n_ref - 1 if leave_one_out else n_ref
    if not 0 < k <= candidates:
        raise RhetoricError(f"k must be in [1, {candidates}] for {n_ref} reference vectors"
                         f"{' (leave-one-out)' if leave_one_out else ''}, got {k}")
    index = faiss.IndexFlatIP(R.shape[1]) if metric == "cosine" else faiss.IndexFlatL2(R.shape[1])
    index.add(R)
    sign = 1.0 if metric == "cosine" else -1.0  # scores: larger is nearer
    n = Q.shape[0]
    # One result more than needed (two with the query itself among them), so
    # that a tie running past the k-th neighbour shows up inside the window.
    fetch = min(n_ref, k + 2 if leave_one_out else k + 1)
    if chunk_size is None:
        chunk_size = max(1, 20_000_000 // fetch)
    out_idx = numpy.empty((n, k), dtype="int64")
    out_sim = numpy.empty((n, k), dtype="float32")

    def settle(queries: numpy.ndarray, sims: numpy.ndarray, ids: numpy.ndarray) -> numpy.ndarray:
        """Write the rows of ``queries`` whose k-th neighbour is certain; return the others."""
        window_min = sims[:, -1].copy()  # faiss returns each row best first
        sims = sims.copy()
        is_self = (ids == queries[:, None]) if leave_one_out else numpy.zeros(ids.shape, bool)
        sims[is_self] = numpy.inf  # sorts first, then skipped
        order = numpy.lexsort((ids, -sims), axis=-1)
        first = is_self.any(axis=1).astype("int64")[:, None]
        cols = numpy.take_along_axis(order, first + numpy.arange(k)[None, :], axis=1)
        top_ids = numpy.take_along_axis(ids, cols, axis=1)
        top_sims = numpy.take_along_axis(sims, cols, axis=1)
        if ids.shape[1] >= n_ref:
            open_tie = numpy.zeros(len(queries), bool)
        else:
            # The k-th neighbour ties with the last result: the tied group may
            # continue beyond the window, so search wider and break it by index.
            open_tie = top_sims[:, -1] == window_min
        done = ~open_tie
        out_idx[queries[done]] = top_ids[done]
        out_sim[queries[done]] = top_sims[done]
        return queries[open_tie]

    for start in range(0, n, chunk_size):
        queries = numpy.arange(start, min(n, start + chunk_size))
        sims, ids = index.search(Q[queries], fetch)
        pending = settle(queries, sign * sims, ids)
        wider = fetch
        while len(pending):
            wider = min(n_ref, wider * 2)
            sims, ids = index.search(Q[pending], wider)
            pending = settle(pending, sign * sims, ids)
    return out_idx, out_sim
