"""The sentence encoders the vector benchmarks compare, per document-disjoint
fold (``cv.run_corpus``; an encoder: ``(split, ctx) -> vectors of the split's
test rows``):

* :func:`raw_minilm`: all-MiniLM-L6-v2 as it is (``st_baseline``);
* :func:`st_finetune`: the same fine-tuned on the split's training rows with
  sentence-transformers' ``BatchAllTripletLoss`` (``st_baseline.finetune_triplets``);
* :func:`pipeline_encoder`: a trained pipeline as it is (``ctx["args"].demo_pipeline``);
* :func:`trunk_encoder`: the pipeline's own encoder -- the classifier's
  fine-tuned MiniLM member with its vector head (``VectorHead.v1``, settings
  :class:`TrunkSettings`) -- fitted per fold on the training papers
  (:func:`trunk_vectors`), reading each sentence with its heading and neighbours.

:func:`st_vector_rows`: the ``BatchAllTripletLoss`` row by fold of zoned
sentences (``cv.zoned_sentences``), as the full-paper benchmark scores it.
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Set

import numpy

from ..extensions import FINE_LABEL, GOLD_LABELS, LABEL, get_span_value, set_span_values
from . import st_baseline
from .cv import sentence_class, split_test_docs, vector_rows
from .pipelines import pipeline_vectors

RAW, FINETUNE, DEMO, TRUNK = "raw MiniLM", "ST BatchAllTriplet fine-tune", "demo encoder (before)", "trunk vector head"


@dataclass
class TrunkSettings:
    """The vector head fitted by :func:`trunk_vectors` (as ``configs/classifier.cfg`` has it by default)."""
    loss: str = "MultiSimilarityLoss"  # spacy_rhetoric.<loss>.v1
    weight: float = 1.0  # its loss weight beside the cross-entropy
    width: int = 256
    pooling: str = "sentence"  # VectorHead.pooling


def raw_minilm(split: Dict, ctx: Dict) -> numpy.ndarray:
    if "raw" not in ctx["cache"]:
        ctx["cache"]["raw"] = st_baseline.load_minilm()
    return st_baseline.encode_normalized(ctx["cache"]["raw"], [r["text"] for r in split["test"]], 64)


def st_finetune(split: Dict, ctx: Dict) -> numpy.ndarray:
    """``ctx["args"]``: ``steps``, ``batch_size``, ``seed``; the losses go to ``split["notes"]``."""
    args = ctx["args"]
    model = st_baseline.load_minilm()
    losses = st_baseline.finetune_triplets(model, [r["text"] for r in split["train"]],
                                           [r["class"] for r in split["train"]],
                                           steps=args.steps, batch_size=args.batch_size, seed=args.seed)
    split.setdefault("notes", {})[FINETUNE] = {"first_loss": losses[0], "last_loss": losses[-1],
                                               "steps": len(losses)}
    return st_baseline.encode_normalized(model, [r["text"] for r in split["test"]], 64)


def pipeline_encoder(split: Dict, ctx: Dict) -> numpy.ndarray:
    """``sent._.rhetoric_vector`` of the test rows from the pipeline at ``ctx["args"].demo_pipeline``."""
    if "demo" not in ctx["cache"]:
        import spacy

        ctx["cache"]["demo"] = spacy.load(ctx["args"].demo_pipeline, exclude=[
            "parser", "tagger", "attribute_ruler", "lemmatizer", "ner", "rhetoric_phrase_labeler"])
    docs, rows = split_test_docs(split, ctx["docs"])
    return pipeline_vectors(ctx["cache"]["demo"], docs, rows)


def trunk_vectors(train_docs, test_docs, args, *, test_rows: List[Dict], held_out: Set[str]) -> numpy.ndarray:
    """The trunk's vector head (``spacy_rhetoric.VectorHead.v1`` on the
    classifier's ``FinetunedMember.v1``; ``args.trunk``: a
    :class:`TrunkSettings`): fitted on ``train_docs`` (the other folds'
    papers; sentences of the ``held_out`` classes have no labels there) with
    the coarse gold labels for its classifier head and the fine ones for its
    vector head, for ``args.steps`` steps of ``args.batch_size`` (as the
    sentence-transformers fine-tune); then one pass over ``test_docs`` (whole
    papers) gives the vectors of ``test_rows`` (``doc`` indexes
    ``test_docs``; ``start`` / ``end`` character offsets)."""
    from spacy.util import registry
    from thinc.api import NumpyOps

    from ..ml.finetuned import VectorHead, finetuned_expert
    from ..ml.members import fit_members
    from ..ml.pooling import doc_sentences, make_indices
    from ..ml.segments import paper_rows

    def as_X(docs):
        return docs, make_indices(NumpyOps(), [doc_sentences(d)[1] for d in docs])

    trunk: TrunkSettings = args.trunk
    gold = [get_span_value(s, LABEL) for d in train_docs for s in doc_sentences(d)[0]]
    labelled = sum(g is not None for g in gold)
    papers = bool(paper_rows(as_X(train_docs[:1])).any())  # full papers (MuLMS-AZ, ART), else abstracts
    head = VectorHead(width=trunk.width, loss=registry.misc.get(f"spacy_rhetoric.{trunk.loss}.v1")(),
                      weight=trunk.weight, pooling=trunk.pooling)
    member = finetuned_expert(st_baseline.MODEL, epochs=args.steps * args.batch_size / max(1, labelled),
                              batch_size=args.batch_size, seed=args.seed, vectors=head,
                              docs="papers" if papers else "others")
    fit_members([member], as_X(train_docs), gold, sorted({g for g in gold if g is not None}))
    out = numpy.asarray(member.predict(as_X(test_docs)))
    row_of, row = {}, 0
    for d, doc in enumerate(test_docs):
        for sent in doc_sentences(doc)[0]:
            row_of[(d, sent.start_char, sent.end_char)] = row
            row += 1
    return out[[row_of[(r["doc"], r["start"], r["end"])] for r in test_rows], -trunk.width:]


def trunk_encoder(split: Dict, ctx: Dict) -> numpy.ndarray:
    """:func:`trunk_vectors` on copies of the split's training papers whose
    held-out classes lose their labels."""
    train_docs = []
    for d in sorted({r["doc"] for r in split["train"]}):
        doc = ctx["docs"][d].copy()
        hidden = [s for s in doc.sents if sentence_class(s) in split["held_out"]]
        for field in (LABEL, FINE_LABEL, GOLD_LABELS):
            set_span_values(doc, field, hidden, [None] * len(hidden))
        train_docs.append(doc)
    docs, rows = split_test_docs(split, ctx["docs"])
    return trunk_vectors(train_docs, docs, ctx["args"], test_rows=rows, held_out=split["held_out"])


def st_vector_rows(texts: Dict[str, List[str]], zones: Dict[str, List[str]], *, steps: int, batch_size: int,
                   seed: int = 0) -> Dict[str, Any]:
    """``cv.vector_rows`` of all-MiniLM-L6-v2 fine-tuned per fold with
    ``BatchAllTripletLoss`` on the zoned sentences of the other folds
    (``texts`` / ``zones`` by fold: ``cv.zoned_sentences``), encoding the fold's
    sentences; with each fold's first and last loss."""
    folds = list(texts)
    vectors, losses = {}, {}
    for fold in folds:
        train_texts = [t for other in folds if other != fold for t in texts[other]]
        train_zones = [z for other in folds if other != fold for z in zones[other]]
        model = st_baseline.load_minilm()
        fold_losses = st_baseline.finetune_triplets(model, train_texts, train_zones, steps=steps,
                                                    batch_size=batch_size, seed=seed)
        losses[fold] = {"first": fold_losses[0], "last": fold_losses[-1], "steps": len(fold_losses)}
        vectors[fold] = list(st_baseline.encode_normalized(model, texts[fold], 64))
        print(f"  {fold}: ST BatchAllTriplet fine-tune, {len(fold_losses)} steps on {len(train_texts)} sentences, "
              f"loss {fold_losses[0]:.3f} -> {fold_losses[-1]:.3f}", flush=True)
    result = vector_rows(vectors, zones)
    result["losses"] = losses
    return result
