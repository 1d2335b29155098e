"""ml/agency.py: the cues of whose work a sentence speaks of, and a TF-IDF
member that reads them (``[...members.tfidf.cues]``)."""
import numpy
import pytest
import spacy
from helpers import PAPER_LABELS as LABELS
from helpers import as_X, paper_doc

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.errors import RhetoricError
from spacy_rhetoric.ml.agency import CUES, AgencyCues, citation_count, sentence_cues
from spacy_rhetoric.ml.members import fit_members
from spacy_rhetoric.ml.tfidf_member import tfidf_expert

CUE = {name: i for i, name in enumerate(CUES)}

# Two papers' worth of sentences that say the same things about a parser, once as the authors' own work and
# once as someone else's: only who is speaking tells the labels apart.
OTHERS = [("Smith (1990) builds a chart parser.", "related work", "2 Related Work", "background"),
          ("Their parser keeps every partial tree.", "related work", "2 Related Work", "background"),
          ("Jones et al. [4] prune the chart.", "related work", "2 Related Work", "background"),
          ("They report a fast parser.", "related work", "2 Related Work", "background")]
OWN = [("We build a chart parser.", "related work", "2 Related Work", "method"),
       ("Our parser keeps every partial tree.", "related work", "2 Related Work", "method"),
       ("We prune the chart.", "related work", "2 Related Work", "method"),
       ("We report a fast parser.", "related work", "2 Related Work", "method")]


@pytest.mark.parametrize("text,n", [
    ("As shown by Peters et al. (2017), it works.", 1),
    ("It works (Ammar et al., 2018; Wu, 2014) and [3, 5-7].", 2),
    ("Kaufman and Rousseeuw 1990 define the statistic.", 1),  # the bare form of a tokenised corpus
    ("Since 1990 the task has grown.", 0),
    ("In 1990 the task grew.", 0),
    ("We train a parser on 2000 sentences.", 0),
])
def test_citations_in_the_forms_papers_and_corpora_write_them(text, n):
    assert citation_count(text) == n


def test_person_and_self_reference_cues():
    we = sentence_cues("In this paper we propose our parser.")
    assert we[CUE["says_we"]] == 1.0 and we[CUE["self_reference"]] == 1.0 and we[CUE["we_not_cites"]] == 1.0
    assert we[CUE["cites"]] == 0.0 and we[CUE["first_person"]] == pytest.approx(2 / 3)
    they = sentence_cues("Their parser (Smith, 1990) is slow; they prune it.")
    assert they[CUE["cites"]] == they[CUE["cites_not_we"]] == 1.0 and they[CUE["third_person"]] == 1.0
    assert they[CUE["says_we"]] == 0.0
    assert sentence_cues("Parsing is old.") == [0.0] * len(CUES)


def test_the_matrix_reads_neighbours_and_a_window_within_each_doc():
    texts = ["Plain.", "We parse.", "Smith (1990) parses.", "Plain again.", "We start a new doc."]
    M = AgencyCues(window=1, weight=2.0).matrix(texts, [4, 1])
    k = len(CUES)
    assert M.shape == (5, 4 * k)
    own = numpy.asarray([sentence_cues(t) for t in texts], dtype="float32") * 2.0
    assert numpy.allclose(M[:, :k], own)
    # the previous and the next sentence of the same doc; zeros across a doc's edge
    assert numpy.allclose(M[2, k : 2 * k], own[1]) and numpy.allclose(M[2, 2 * k : 3 * k], own[3])
    assert not M[0, k : 2 * k].any() and not M[3, 2 * k : 3 * k].any() and not M[4, k : 3 * k].any()
    # the mean over one sentence on each side, cut at the doc's edges
    assert numpy.allclose(M[0, 3 * k :], own[0:2].mean(axis=0))
    assert numpy.allclose(M[2, 3 * k :], own[1:4].mean(axis=0))
    assert numpy.allclose(M[4, 3 * k :], own[4])


def test_a_cue_block_with_impossible_settings_is_an_error():
    from spacy_rhetoric.ml.agency import build_agency_cues

    with pytest.raises(RhetoricError, match="window"):
        build_agency_cues(window=-1)
    with pytest.raises(RhetoricError, match="weight"):
        build_agency_cues(weight=0.0)


def test_a_tfidf_member_with_cues_tells_others_work_from_own_and_keeps_its_settings():
    nlp = spacy.blank("en")
    docs = [paper_doc(nlp, OTHERS), paper_doc(nlp, OWN)]
    gold = [r[3] for r in OTHERS + OWN]
    new = [[("Brown (1992) parses the news.", "related work", "2 Related Work", "background")],
           [("We parse the news.", "related work", "2 Related Work", "method")]]
    X_new = as_X([paper_doc(nlp, rows, labels=False) for rows in new])
    predicted, widths = {}, {}
    for cues in (None, AgencyCues(window=1)):
        member = tfidf_expert(min_df=1, C=50.0, cues=cues)
        fit_members([member], as_X(docs), gold, LABELS)
        assert member.attrs["cues"] == (None if cues is None else {"window": 1, "weight": 1.0})
        probs = member.predict(X_new)
        predicted[cues is not None] = [LABELS[i] for i in probs.argmax(axis=1)]
        widths[cues is not None] = len(member.shims[0].cfg["state"]["classifier"]["coef"][0])
        # saved and loaded: the same probabilities
        again = tfidf_expert(min_df=1, C=50.0, cues=cues)
        again.from_bytes(member.to_bytes())
        assert numpy.allclose(again.predict(X_new), probs)
    # the cues are columns of the features the classifier weighs, and tell whose work "parses the news" is
    assert widths[True] == widths[False] + 4 * len(CUES)
    assert predicted[True] == ["background", "method"]
