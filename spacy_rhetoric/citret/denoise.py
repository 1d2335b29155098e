"""Piecewise common component removal (CitRet §3.1.3, after Ethayarajh 2018).

The paper's equation (§3.1.3)::

    ṽ = v − Σ_{i=1..m} λ_i · proj_{pc_i} v,    λ_i = σ_i² / Σ_{j=1..m} σ_j²

where pc_1..pc_m are the first m (= 3) principal components of the matrix
A (l × d) of the document's sentence embeddings, found by singular value
decomposition of A, σ_i are the corresponding singular values, and
proj_{pc} v = (v · pc) pc for a unit vector pc. As in the paper (and in
Ethayarajh 2018 / Arora et al. 2017), A is decomposed as it is, without
centring. Note that the authors' released code weights by σ_i / Σσ_j; this
module follows the equation printed in the paper (squared singular values,
i.e. each component's share of the variance captured by the first m).
"""
from typing import Tuple

import numpy

from ..errors import RhetoricError


def common_components(matrix: numpy.ndarray, m: int = 3) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The first ``m`` right singular vectors of ``matrix`` (rows = sentences)
    and their weights λ_i = σ_i² / Σ_{j≤m} σ_j².

    Returns ``(components [m', d], weights [m'])`` with m' = min(m, rank bound);
    an all-zero matrix gives no components.
    """
    A = numpy.asarray(matrix, dtype="float64")
    if A.ndim != 2:
        raise ValueError(f"common_components expects a 2-d matrix, got shape {A.shape}")
    if m < 1:
        raise RhetoricError(f"number of components m must be >= 1, got {m}")
    _, sigma, vt = numpy.linalg.svd(A, full_matrices=False)
    k = min(m, len(sigma))
    sigma, vt = sigma[:k], vt[:k]
    keep = sigma > 1e-12
    sigma, vt = sigma[keep], vt[keep]
    if len(sigma) == 0:
        return numpy.zeros((0, A.shape[1])), numpy.zeros((0,))
    sq = sigma ** 2
    return vt, sq / sq.sum()


def remove_common_components(
    vectors: numpy.ndarray, components: numpy.ndarray, weights: numpy.ndarray
) -> numpy.ndarray:
    """ṽ = v − Σ_i λ_i (v · pc_i) pc_i for every row v of ``vectors``."""
    V = numpy.asarray(vectors, dtype="float64")
    single = V.ndim == 1
    if single:
        V = V[None, :]
    if len(components) == 0:
        out = V.copy()
    else:
        proj = V @ components.T  # [n, m] scalar projections v · pc_i
        out = V - (proj * weights[None, :]) @ components
    return out[0] if single else out


def denoise(vectors: numpy.ndarray, reference: numpy.ndarray, m: int = 3) -> numpy.ndarray:
    """Remove from ``vectors`` the first ``m`` common components of ``reference``."""
    comps, weights = common_components(reference, m)
    return remove_common_components(vectors, comps, weights)
