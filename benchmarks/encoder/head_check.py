"""Does the vector head cost the label head? The classifier's fine-tuned
MiniLM member (``FinetunedMember.v1``, packaged settings) fitted on four
MuLMS-AZ folds, with or without its vector head, scored on the fifth: its
own single-zone accuracy and lenient accuracy (labels), and, with the head,
P@1 / MAP@R of its vectors by expert zone (``--raw``: raw all-MiniLM-L6-v2
on the same sentences). ``--pooling sentence``: the head reads the mean over
the sentence's own word pieces instead of the whole pair (``VectorHead.pooling``).
With vectors it also reports ``adjacent_nn``: the share of sentences whose
nearest neighbour is the sentence just before or after it in its paper
(what a vector of the sentence *with its neighbours* drifts to).

    OMP_NUM_THREADS=1 python benchmarks/encoder/head_check.py MultiSimilarityLoss 1.0 1.0 train1 --raw
    OMP_NUM_THREADS=1 python benchmarks/encoder/head_check.py MultiSimilarityLoss 1.0 1.0 train1 --pooling sentence
    OMP_NUM_THREADS=1 python benchmarks/encoder/head_check.py none 0 1.0 train1

Arguments: the metric loss (``spacy_rhetoric.<name>.v1``; ``none``: no
head), its weight, the fine-tune's epochs, the test fold. Prints one JSON line.
"""
import json
import sys
import time

import numpy
import spacy
from spacy.util import registry
from thinc.api import NumpyOps

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.evaluation.metrics import retrieval_scores
from spacy_rhetoric.extensions import get_doc_value, get_span_value
from spacy_rhetoric.ml.members import fit_members
from spacy_rhetoric.ml.pooling import doc_sentences, make_indices
from spacy_rhetoric.readers.section_labels import mulms_docs

LABELS = ["background", "method", "objective", "other", "result"]


def as_X(docs):
    return docs, make_indices(NumpyOps(), [doc_sentences(d)[1] for d in docs])


def adjacent_share(vectors: numpy.ndarray, places) -> float:
    """Share of rows whose nearest other row (cosine) is the row of the
    sentence next to it in the same paper; ``places``: per row (doc, index)."""
    unit = vectors / numpy.maximum(numpy.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    numpy.fill_diagonal(sims, -numpy.inf)
    nearest = sims.argmax(1)
    return float(numpy.mean([places[i][0] == places[j][0] and abs(places[i][1] - places[j][1]) == 1
                             for i, j in enumerate(nearest.tolist())]))


def main(argv) -> int:
    pooling = "pair"
    if "--pooling" in argv:
        at = argv.index("--pooling")
        pooling = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    loss_name, weight, epochs = argv[0], float(argv[1]), float(argv[2])
    test_fold = argv[3] if len(argv) > 3 else "train1"
    nlp = spacy.blank("en")
    tagger = spacy.blank("en").add_pipe("rhetoric_section_tagger")
    docs = mulms_docs("../shared/data/mulms-az/train.jsonl", nlp, tagger)
    train = [d for d in docs if get_doc_value(d, "fold") != test_fold]
    test = [d for d in docs if get_doc_value(d, "fold") == test_fold]
    gold = [get_span_value(s, "label") for d in train for s in doc_sentences(d)[0]]
    started = time.time()
    head = None
    if loss_name != "none":
        loss = registry.misc.get(f"spacy_rhetoric.{loss_name}.v1")()
        head = registry.misc.get("spacy_rhetoric.VectorHead.v1")(loss=loss, width=256, weight=weight,
                                                                 pooling=pooling)
    papers = registry.misc.get("spacy_rhetoric.papers.v1")()
    member = registry.architectures.get("spacy_rhetoric.FinetunedMember.v1")(papers, epochs=epochs, vectors=head)
    fit_members([member], as_X(train), gold, LABELS)
    fit_seconds = time.time() - started
    out = member.predict(as_X(test))
    rows = [(s, get_span_value(s, "fine_label"), get_span_value(s, "label"), get_span_value(s, "gold_labels"))
            for d in test for s in doc_sentences(d)[0]]
    places = [(d, k) for d, doc in enumerate(test) for k, _ in enumerate(doc_sentences(doc)[0])]
    pred = [LABELS[i] for i in out[:, : len(LABELS)].argmax(1)]
    scored = [i for i, r in enumerate(rows) if r[2]]
    zoned = [i for i, r in enumerate(rows) if r[1]]
    result = {"loss": loss_name, "weight": weight, "epochs": epochs, "pooling": pooling, "fold": test_fold,
              "fit_s": round(fit_seconds),
              "single": round(float(numpy.mean([pred[i] == rows[i][2] for i in scored])), 3),
              "lenient": round(float(numpy.mean([pred[i] in (rows[i][3] or [rows[i][2]]) for i in scored])), 3)}
    if out.shape[1] > len(LABELS):
        result["trunk"] = retrieval_scores(out[zoned, len(LABELS):], [rows[i][1] for i in zoned])
        result["trunk"]["adjacent_nn"] = adjacent_share(out[zoned, len(LABELS):], [places[i] for i in zoned])
    if "--raw" in argv:
        from sentence_transformers import SentenceTransformer

        from spacy_rhetoric.util import resolve_hf_model

        model = SentenceTransformer(resolve_hf_model("sentence-transformers/all-MiniLM-L6-v2"), device="cpu")
        vectors = model.encode([rows[i][0].text for i in zoned], normalize_embeddings=True)
        result["raw"] = retrieval_scores(vectors, [rows[i][1] for i in zoned])
        result["raw"]["adjacent_nn"] = adjacent_share(vectors, [places[i] for i in zoned])
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
