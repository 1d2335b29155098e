"""The one cosine k-NN search (spacy_rhetoric.evaluation.neighbours), used by the
retrieval metrics and by functional alignment."""
import numpy
import pytest

from spacy_rhetoric.evaluation.neighbours import cosine_neighbours, l2_normalize


def test_cross_search_matches_brute_force_cosine():
    rng = numpy.random.default_rng(0)
    a, b = rng.normal(size=(7, 5)), rng.normal(size=(9, 5)) * 3.0  # B not normalised
    indices, scores = cosine_neighbours(a, 3, b)
    sims = l2_normalize(a) @ l2_normalize(b).T
    expected = numpy.argsort(-sims, axis=1)[:, :3]
    assert indices.tolist() == expected.tolist()
    numpy.testing.assert_allclose(scores, numpy.take_along_axis(sims, expected, axis=1), atol=1e-5)


def test_cross_search_hand_example_ties_by_lower_index():
    a = numpy.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = numpy.array([[0.0, 2.0], [3.0, 0.0], [0.0, 5.0], [0.0, 1.0]])
    indices, scores = cosine_neighbours(a, 2, b)
    assert indices[0].tolist() == [1, 0]  # then B0, B2, B3 tie at 0: lowest index
    numpy.testing.assert_allclose(scores[0], [1.0, 0.0], atol=1e-6)
    # A1 ties with B0, B2, B3 at 1: the lowest indices, whatever faiss returns first.
    assert indices[1].tolist() == [0, 2]
    numpy.testing.assert_allclose(scores[2], [numpy.sqrt(0.5)] * 2, atol=1e-6)


def test_leave_one_out_excludes_the_query_by_id():
    X = numpy.array([[1, 0], [1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)
    idx, sims = cosine_neighbours(X, 2)
    for q in range(5):
        assert q not in idx[q]
    assert idx[0].tolist() == [1, 2] and idx[2].tolist() == [0, 1] and idx[3].tolist() == [4, 0]
    assert sims[0].tolist() == pytest.approx([1.0, 1.0])
    # Many duplicates: ties past the window are settled by index, whatever
    # order faiss returns them in and wherever the query itself lands.
    same = numpy.ones((9, 2))
    idx, _ = cosine_neighbours(same, 2)
    assert [row.tolist() for row in idx] == [[1, 2], [0, 2]] + [[0, 1]] * 7
    # Chunked search gives the same neighbours.
    rng = numpy.random.default_rng(3)
    Y = rng.normal(size=(40, 5))
    Y[10] = Y[11] = Y[12]
    assert (cosine_neighbours(Y, 7)[0] == cosine_neighbours(Y, 7, chunk_size=4)[0]).all()


def test_errors():
    with pytest.raises(ValueError, match="dimensions"):
        cosine_neighbours(numpy.ones((2, 3)), 1, numpy.ones((2, 4)))
    with pytest.raises(ValueError, match=r"k must be in \[1, 2\]"):
        cosine_neighbours(numpy.ones((2, 3)), 3, numpy.ones((2, 3)))
    with pytest.raises(ValueError, match=r"k must be in \[1, 1\].*leave-one-out"):
        cosine_neighbours(numpy.ones((2, 3)), 2)
    with pytest.raises(ValueError, match="k must be"):
        cosine_neighbours(numpy.ones((2, 3)), 0)
    with pytest.raises(ValueError, match="NaN"):
        cosine_neighbours(numpy.array([[numpy.nan, 1.0], [1.0, 0.0]]), 1)
