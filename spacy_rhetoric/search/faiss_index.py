"""The faiss side of a rhetorical search index: which index for how many
vectors (exact, HNSW, IVF-PQ with re-ranking), its construction, search
parameters and filtered-search parameters (ID selectors)."""
from typing import Any, Dict, Optional, Tuple

import numpy

from .. import extensions as ext
from .sources import SearchIndexError, not_for_vectors

EXACT_MAX_VECTORS = 200_000


HNSW_FACTORY = "HNSW32,Flat"


HNSW_PARAMS = {"efSearch": 128}


HNSW_EF_CONSTRUCTION = 64


IVFPQ_PARAMS = {"nprobe": 64, "k_factor_rf": 20}


IVF_KMEANS_ITERATIONS = 10


SUBSET_EXACT_MAX = 50_000


INDEX_TYPES = ("auto", "flat", "hnsw", "ivfpq")


def index_factory_for(n: int, index_type: str = "auto", *, dim: int = 384) -> Tuple[str, Dict[str, Any]]:
    """The faiss factory string and search parameters for ``n`` vectors of ``dim``."""
    if index_type == "auto":
        index_type = "flat" if n <= EXACT_MAX_VECTORS else "ivfpq"
    if index_type == "flat":
        return "Flat", {}
    if index_type == "hnsw":
        return HNSW_FACTORY, dict(HNSW_PARAMS)
    if index_type == "ivfpq":
        nlist = int(max(16, min(65536, round(n ** 0.5))))
        if dim % 8 == 0:  # 4-bit fast-scan PQ of 4 dims per code, exact re-ranking
            return f"IVF{nlist},PQ{dim // 4}x4fs,RFlat", dict(IVFPQ_PARAMS)
        m = max(d for d in range(1, max(1, dim // 8) + 1) if dim % d == 0)
        return f"IVF{nlist},PQ{m},RFlat", dict(IVFPQ_PARAMS)
    return index_type, {}  # any faiss index_factory string


def pipeline_dim(nlp) -> int:
    """The dimension of the pipeline's sentence vectors (one probe sentence)."""
    from ..readers.common import doc_from_sentences

    with nlp.select_pipes(disable=not_for_vectors(nlp)):
        doc = nlp(doc_from_sentences(nlp, ["This is a probe sentence."]))
    vector = ext.get_span_value(doc[:], ext.VECTOR)
    if vector is None:
        raise SearchIndexError("the pipeline gave no rhetoric_vector for a probe sentence")
    return int(vector.shape[0])


def check_index_type(index_type: str, dim: int) -> None:
    """``index_type`` is one of INDEX_TYPES or a faiss factory string usable at ``dim``."""
    import faiss

    if index_type in INDEX_TYPES:
        return
    try:
        faiss.index_factory(dim, index_type, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        raise SearchIndexError(f"index type must be one of {', '.join(INDEX_TYPES)} or a faiss index_factory "
                               f"string valid for {dim}-d vectors; got {index_type!r} "
                               f"({str(err).strip().splitlines()[-1]})") from None


def make_index(vectors: numpy.ndarray, factory: str, *, seed: int = 0, train_max: int = 100_000):
    """A faiss index (inner product) from ``factory`` holding ``vectors`` (unit rows)."""
    import faiss

    dim = vectors.shape[1]
    try:
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        raise SearchIndexError(f"faiss cannot make an index from {factory!r}: {err}") from err
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.cp.niter = IVF_KMEANS_ITERATIONS
        train_max = min(train_max, 64 * ivf.nlist)
    elif hasattr(faiss.downcast_index(index), "hnsw"):
        faiss.downcast_index(index).hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    if not index.is_trained:
        rng = numpy.random.default_rng(seed)
        sample = vectors if len(vectors) <= train_max else \
            vectors[numpy.sort(rng.choice(len(vectors), train_max, replace=False))]
        index.train(numpy.ascontiguousarray(sample))
    for start in range(0, len(vectors), 100_000):
        index.add(numpy.ascontiguousarray(vectors[start:start + 100_000]))
    return index


class IndexBuildError(SearchIndexError):
    """faiss cannot build the index type asked for from these vectors."""


def build_faiss_index(vectors: numpy.ndarray, index_type: str = "auto", *,
                      seed: int = 0) -> Tuple[Any, str, Dict[str, Any]]:
    """``(index, factory, params)``: the index ``index_type`` gives for these
    unit vectors (:func:`index_factory_for`), built (:func:`make_index`)
    with its search parameters set. :class:`IndexBuildError` when faiss
    cannot build it (e.g. IVF4096 trained on 235 vectors)."""
    n = len(vectors)
    factory, params = index_factory_for(n, index_type, dim=vectors.shape[1])
    try:
        index = make_index(vectors, factory, seed=seed)
    except RuntimeError as err:
        reason = " ".join(str(err).split())
        reason = reason.split("failed:")[-1].strip() if "failed:" in reason else reason
        raise IndexBuildError(f"faiss cannot build a {factory!r} index of {n} vectors: {reason}; "
                              "use --index-type auto or flat") from None
    set_search_params(index, params)
    return index, factory, params


def search_index(index, q: numpy.ndarray, k: int,
                 allowed: Optional[numpy.ndarray] = None) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """``(ids, scores)`` of the ``k`` vectors of ``index`` most similar to
    the unit query ``q`` (``[1, d]``), best first, among the ids ``allowed``
    (None: all; not empty). Up to ``SUBSET_EXACT_MAX`` allowed ids are
    scored exactly (their vectors reconstructed from the index), more go to
    faiss with an ID selector; ids < 0 pad a short faiss result."""
    if allowed is not None and len(allowed) <= SUBSET_EXACT_MAX:
        vectors = numpy.vstack([index.reconstruct_batch(allowed[s:s + 10_000])
                                for s in range(0, len(allowed), 10_000)])
        sims = vectors @ q[0]
        order = numpy.lexsort((allowed, -sims))[:k]
        return allowed[order], sims[order]
    k = min(k, index.ntotal)
    params = None if allowed is None else selector_params(index, allowed, k)
    scores, ids = faiss_search(index, q, k, params=params)
    return ids[0], scores[0]


def set_search_params(index, params: Dict[str, Any]) -> None:
    import faiss

    space = faiss.ParameterSpace()
    for name, value in params.items():
        try:
            space.set_index_parameter(index, name, value)
        except RuntimeError as err:
            raise SearchIndexError(f"index parameter {name}={value!r} does not apply to this index: {err}") from err


def selector_params(index, allowed: numpy.ndarray, k: int):
    """faiss SearchParameters restricting a search of ``index`` to the ids
    ``allowed`` (IDSelectorBatch), with the index's own nprobe/efSearch/k_factor."""
    import faiss

    selector = faiss.IDSelectorBatch(numpy.ascontiguousarray(allowed, dtype="int64"))
    return _params_for(faiss.downcast_index(index), selector, k)


def _params_for(index, selector, k: int):
    import faiss

    if isinstance(index, faiss.IndexRefine):
        base = _params_for(faiss.downcast_index(index.base_index), selector, k)
        return faiss.IndexRefineSearchParameters(sel=selector, k_factor=index.k_factor, base_index_params=base)
    if hasattr(index, "hnsw"):
        return faiss.SearchParametersHNSW(sel=selector, efSearch=max(k, index.hnsw.efSearch))
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        return faiss.SearchParametersIVF(sel=selector, nprobe=ivf.nprobe)
    return faiss.SearchParameters(sel=selector)


def faiss_search(index, queries: numpy.ndarray, k: int, params=None):
    """``index.search(queries, k, params=params)``, also after
    ``faiss.contrib.torch_utils`` (imported by e.g. pytorch-metric-learning)
    replaced ``Index.search`` process-wide with a wrapper that has no
    ``params``: the numpy original stays reachable as ``search_numpy``."""
    search = getattr(index, "search_numpy", index.search)
    return search(queries, k, params=params)
