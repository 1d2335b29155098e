"""A trained pipeline over gold papers, as the benchmarks score it: label
scores and vectors of each kept sentence from one pass (:func:`pipeline_scores`),
each mixture member's probabilities from the same pass
(:func:`member_probabilities`), the labels of another mixture of them
(:func:`mixture_labels`), the vectors of given sentences
(:func:`pipeline_vectors`), and fitting a saved pipeline's fitted members again
(:func:`refit_members`).

The papers keep their sentence boundaries (sentencizer, senter and parser are
not run) and lose their gold labels and scores before the pass; a kept
sentence is a sentence that is not blank (:func:`kept_sentences`), in
document order.
"""
from typing import Any, Callable, Collection, Dict, Iterable, List, Optional, Sequence

import numpy
from thinc.api import Model

from ..errors import RhetoricError
from ..extensions import (
    FINE_LABEL,
    FINE_SCORES,
    GOLD_LABELS,
    LABEL,
    SCORES,
    SECTION,
    VECTOR,
    clear_field,
    get_span_value,
)
from ..ml.experts import NETWORK, member_outputs
from ..ml.sections import forced_rows

CLASSIFIER = "rhetoric_function_classifier"
# members that speak on a paper's abstract only (learned from abstracts; mixture_labels)
ABSTRACT_MEMBERS = ("tfidf_expert_others",)


def kept_sentences(doc) -> List[Any]:
    """The sentences of a paper that the pipeline rows keep (not blank)."""
    return [s for s in doc.sents if s.text.strip()]


def pipeline_scores(nlp, docs, *, hide_sections: bool = False,
                    vectors: Optional[List[List[Optional[numpy.ndarray]]]] = None,
                    scores_field: str = "scores") -> List[List[Dict[str, float]]]:
    """Run ``nlp`` over copies of the papers that carry their headings and
    (unless ``hide_sections``) sections but no labels; the label scores of
    each kept sentence (``scores_field``: ``"fine_scores"`` for a fine
    classifier's). ``vectors``: a list that receives, per paper, each kept
    sentence's ``rhetoric_vector`` from the same pass (None where it has none)."""
    copies = []
    for doc in docs:
        copy = doc.copy()
        for field in (LABEL, GOLD_LABELS, SCORES, FINE_LABEL, FINE_SCORES) + ((SECTION,) if hide_sections else ()):
            clear_field(copy, field)
        copies.append(copy)
    skip = [name for name in nlp.pipe_names if name in ("sentencizer", "senter", "parser")]
    if hide_sections:
        skip += [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "rhetoric_section_tagger"]
    out = []
    with nlp.select_pipes(disable=skip):
        for doc in nlp.pipe(copies, batch_size=4):
            sents = kept_sentences(doc)
            out.append([get_span_value(s, scores_field) or {} for s in sents])
            if vectors is not None:
                vectors.append([get_span_value(s, VECTOR) for s in sents])
    return out


def pipeline_vectors(nlp, docs, rows: List[Dict], *, batch_size: int = 4,
                     disable_factories: Sequence[str] = (CLASSIFIER,)) -> numpy.ndarray:
    """``sent._.rhetoric_vector`` of each row (``doc`` indexing ``docs``;
    ``start`` / ``end`` character offsets), ``nlp`` run over label-free copies
    of ``docs`` with their sentence boundaries kept and without the components
    of ``disable_factories`` (by default the function classifier, which a
    sentence encoder does not need) -- except those that write the vectors
    (``capabilities.vector_components``: the default pipeline's
    classifier, whose vector head writes them, stays)."""
    from ..capabilities import vector_components

    writers = set(vector_components(nlp))
    copies = []
    for doc in docs:
        copy = doc.copy()
        for field in (LABEL, FINE_LABEL, GOLD_LABELS, SCORES, VECTOR):
            clear_field(copy, field)
        copies.append(copy)
    skip = [n for n in nlp.pipe_names if n not in writers and (n in ("sentencizer", "senter", "parser")
            or nlp.get_pipe_meta(n).factory in disable_factories)]
    found = {}
    with nlp.select_pipes(disable=skip):
        for d, doc in enumerate(nlp.pipe(copies, batch_size=batch_size)):
            for sent in doc.sents:
                found[(d, sent.start_char, sent.end_char)] = get_span_value(sent, VECTOR)
    vectors = [found.get((r["doc"], r["start"], r["end"])) for r in rows]
    missing = sum(v is None for v in vectors)
    if missing:
        raise RhetoricError(f"{missing} of {len(rows)} sentences got no rhetoric_vector (sentence boundaries "
                            "moved, or the pipeline has no sentence encoder)")
    return numpy.vstack(vectors).astype("float32")


def best_labels(scores: List[List[Dict[str, float]]]) -> List[List[Optional[str]]]:
    """Per paper, each sentence's best label in ``pipeline_scores``' output (None without scores)."""
    return [[max(s, key=s.get) if s else None for s in doc_scores] for doc_scores in scores]


def pipeline_predictions(nlp, docs, *, hide_sections: bool = False,
                         vectors: Optional[List[List[Optional[numpy.ndarray]]]] = None,
                         scores_field: str = "scores") -> List[List[Optional[str]]]:
    """One label per kept sentence (``pipeline_scores``' best; None without scores)."""
    return best_labels(pipeline_scores(nlp, docs, hide_sections=hide_sections, vectors=vectors,
                                       scores_field=scores_field))


def member_probabilities(nlp, docs, *, scores: Optional[List] = None,
                         vectors: Optional[List[List[Optional[numpy.ndarray]]]] = None,
                         pipe_name: str = CLASSIFIER) -> Optional[Dict[str, numpy.ndarray]]:
    """Each mixture member's ``[n_sentences, n_labels]`` probabilities (labels
    in the pipe's order, the forced sections -- back matter -- set to their
    label as the pipe does) over the kept sentences of ``docs``, by member
    name (the network: ``NETWORK``; the others by their model name), all from
    one pass of the pipeline as it is (``ml.experts.member_outputs``).
    ``scores`` / ``vectors``: lists that receive ``pipeline_scores``' output
    and vectors of the same pass. None without an ``experts`` layer."""
    clf = nlp.get_pipe(pipe_name)
    nodes = [n for n in clf.model.walk() if n.name == "experts"]
    if not nodes:
        return None
    node, n_labels = nodes[0], len(clf.labels)
    force = next((n for n in clf.model.walk() if "forced_sections" in n.attrs), None)
    names = [NETWORK if i == 0 else member.name for i, member in enumerate(node.layers)]
    probs = []
    with member_outputs(clf.model) as batches:
        found = pipeline_scores(nlp, docs, vectors=vectors)
    for X, outputs in batches:
        batch = numpy.array(outputs[:, :, :n_labels], dtype="float32")
        rows, label = forced_rows(force, X) if force is not None else ([], None)
        if rows and label is not None:
            batch[:, rows, :] = 0.0
            batch[:, rows, label] = 1.0
        probs.append(batch)
    if scores is not None:
        scores.extend(found)
    stacked = numpy.concatenate(probs, axis=1) if probs else numpy.zeros((len(names), 0, n_labels), "f")
    if stacked.shape[1] != sum(len(d) for d in found):
        raise RhetoricError(f"member_probabilities: {stacked.shape[1]} rows for {sum(len(d) for d in found)} "
                            "sentences")
    return dict(zip(names, stacked))


def mixture_labels(probs: Dict[str, numpy.ndarray], weights: Dict[str, float], labels: Sequence[str],
                   rows: Sequence[Dict], abstract_members: Collection[str] = ABSTRACT_MEMBERS) -> List[str]:
    """The label of each row (``evaluation.fullpaper.sentence_rows``, the
    order of ``member_probabilities``) under the mixture ``weights`` (member
    name -> weight; a member of ``abstract_members`` speaks on the rows of
    section ``abstract`` only), normalised per row."""
    abstract = numpy.asarray([r["section"] == "abstract" for r in rows], dtype="f")[:, None]
    speaks = {m: abstract if m in abstract_members else 1.0 for m in weights}
    mixed = sum(w * speaks[m] * probs[m] for m, w in weights.items())
    mixed = mixed / sum(w * speaks[m] for m, w in weights.items())
    return [labels[int(k)] for k in mixed.argmax(axis=1)]


def refit_members(pipe, get_examples: Callable[[], Iterable], members: Sequence[Model]) -> None:
    """Fit ``members`` (fitted members of ``pipe``'s model) again on every
    gold sentence of ``get_examples()``, as the member-fitting step
    (``pipeline/fitting.py``) fits them: ``pipe.fit_members`` (the reference
    docs, with their true sections; the pipe's gold field and labels)."""
    pipe.fit_members(get_examples, list(members))
