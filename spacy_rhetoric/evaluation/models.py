"""Evaluate one model spec on gold ``.spacy`` docs: a pipeline
directory/package, or ``raw:<hf name>`` (plain transformer, mean pooling, no
fine-tuning; ``raw-minilm`` is an alias). The library side of
``spacy-rhetoric evaluate`` (``cli/evaluate.py``) and of
``benchmarks/encoder/bench_embeddings.py``; the metrics are ``metrics.py``'s.
"""
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from wasabi import msg

from ..errors import RhetoricError

BASELINE_ALIASES = {"raw-minilm": "raw:sentence-transformers/all-MiniLM-L6-v2"}
RAW_PREFIX = "raw:"


def resolve_model_spec(spec: str) -> str:
    return BASELINE_ALIASES.get(spec, spec)


def read_docbin(path: Path, vocab, limit: int = 0) -> List[Any]:
    """The Docs of a ``.spacy`` file (the first ``limit`` when > 0); a
    ValueError naming the file when it is missing or not a DocBin."""
    from spacy.tokens import DocBin

    from ..extensions import docbin_docs
    from ..io import check_input

    check_input(path, what=".spacy input")
    try:
        docbin = DocBin(store_user_data=True).from_disk(path)
    except Exception as err:  # noqa: BLE001 - name the file in the error
        raise RhetoricError(f"cannot read {path} as a .spacy DocBin: {err}") from err
    docs = []
    for doc in docbin_docs(docbin, vocab):
        docs.append(doc)
        if limit > 0 and len(docs) >= limit:
            break
    return docs


def gold_texts_and_labels(docs) -> Tuple[List[str], List[str]]:
    from .metrics import gold_sentences

    texts, labels = [], []
    for doc in docs:
        for start, end, label in gold_sentences(doc):
            texts.append(doc[start:end].text)
            labels.append(label)
    return texts, labels


def model_outputs(spec: str, docs, *, batch_size: int = 64, label_field: str = "label") -> Dict[str, Any]:
    """``{"labels", "vectors" (array or None), "predicted" (list or None), ...}``
    for one model spec over gold docs."""
    import numpy

    from . import metrics as evaluation

    start = time.time()
    if spec.startswith(RAW_PREFIX):
        texts, labels = gold_texts_and_labels(docs)
        vectors = evaluation.raw_transformer_vectors(texts, spec[len(RAW_PREFIX):], batch_size=batch_size)
        out = {"labels": labels, "vectors": vectors, "predicted": None, "n_without_vector": 0}
    else:
        out = evaluation.annotated_outputs(load_pipeline(spec), docs, label_field=label_field)
        kept = [i for i, v in enumerate(out["vectors"]) if v is not None]
        if 0 < out["n_without_vector"] < len(out["labels"]):
            msg.warn(f"{spec}: {out['n_without_vector']} of {len(out['labels'])} gold sentences got "
                     f"no rhetoric_vector and are left out of the embedding metrics")
        out["embedding_labels"] = [out["labels"][i] for i in kept]
        out["vectors"] = numpy.vstack([out["vectors"][i] for i in kept]) if kept else None
    out.setdefault("embedding_labels", out["labels"])
    out["seconds"] = time.time() - start
    return out


_PIPELINES: Dict[str, Any] = {}


def load_pipeline(spec: str):
    """The spaCy pipeline ``spec``, loaded once per process; a ValueError naming it when it cannot be loaded."""
    import spacy

    import spacy_rhetoric  # noqa: F401 - extensions

    if spec not in _PIPELINES:
        try:
            _PIPELINES[spec] = spacy.load(spec)
        except OSError as err:
            raise RhetoricError(f"cannot load pipeline {spec!r}: {err}") from err
    return _PIPELINES[spec]


def evaluate_model(spec: str, dev_docs, train_docs=None, *, seed: int = 0,
                   tsne: Optional[Path] = None, batch_size: int = 64,
                   label_field: str = "label") -> Dict[str, Any]:
    from . import metrics as evaluation

    msg.info(f"Evaluating {spec}")
    dev = model_outputs(spec, dev_docs, batch_size=batch_size, label_field=label_field)
    result: Dict[str, Any] = {"n_sentences": len(dev["labels"]), "seconds_encode_dev": round(dev["seconds"], 1)}
    if dev["predicted"] is not None:
        result["classifier"] = evaluation.classifier_scores(dev["labels"], dev["predicted"])
        classifier_labels = None
        if not spec.startswith(RAW_PREFIX):
            classifier_labels = evaluation.check_label_field(load_pipeline(spec), label_field, name=spec)
        mismatch = evaluation.label_mismatch(dev["labels"], classifier_labels, dev["predicted"])
        result["classifier"]["label_mismatch"] = mismatch
        warn_label_mismatch(spec, mismatch, len(dev["labels"]))
    if dev["vectors"] is None:
        msg.warn(f"{spec}: no sentence vectors; only classifier scores are reported")
        return result
    X, y = dev["vectors"], dev["embedding_labels"]
    result["retrieval"] = evaluation.retrieval_scores(X, y)
    result["clustering"] = evaluation.clustering_scores(X, y, seed=seed)
    if train_docs is not None:
        train = model_outputs(spec, train_docs, batch_size=batch_size, label_field=label_field)
        if train["vectors"] is not None:
            result["n_train_sentences"] = len(train["embedding_labels"])
            result["downstream"] = evaluation.downstream_scores(
                train["vectors"], train["embedding_labels"], X, y, seed=seed
            )
    if tsne is not None:
        result["tsne"] = str(evaluation.tsne_plot(X, y, tsne, seed=seed, title=spec))
    return result


def warn_label_mismatch(spec: str, mismatch: Dict[str, Any], n_gold: int) -> None:
    """A warning when some gold labels can never be predicted (F1 is then
    bounded, or 0, by construction, not by the model), naming them and the
    classifier labels never seen in the gold data; the latter alone (e.g. a
    rare label missing from a small dev set) is only a note."""
    never_predicted = mismatch["gold_not_in_classifier"]
    never_seen = mismatch["classifier_not_in_gold"]
    seen_text = f"classifier labels never seen in the gold data: {', '.join(never_seen)}"
    if not never_predicted:
        if never_seen:
            msg.info(f"{spec}: {seen_text}")
        return
    text = (f"{spec}: label sets differ; gold labels the classifier never predicts: "
            f"{', '.join(never_predicted)} ({mismatch['n_gold_not_in_classifier']} of {n_gold} sentences)")
    if never_seen:
        text += f"; {seen_text}"
    msg.warn(text, "Is --label-field right, and were the gold data and the classifier labelled the same way "
                   "(e.g. PMC 'methods' vs CSAbstruct 'method', fine vs coarse labels)?")


ROWS = [
    ("retrieval", "p_at_1", "P@1"),
    ("retrieval", "map_at_r", "MAP@R"),
    ("downstream", "knn", "KNN F1-micro"),
    ("downstream", "svm", "SVM F1-micro"),
    ("downstream", "rf", "RF F1-micro"),
    ("downstream", "mlp", "MLP F1-micro"),
    ("downstream", "dt", "DT F1-micro"),
    ("clustering", "ari", "ARI"),
    ("clustering", "ami", "AMI"),
    ("clustering", "silhouette", "Silhouette"),
    ("classifier", "f1_micro", "Classifier F1-micro"),
    ("classifier", "f1_macro", "Classifier F1-macro"),
]


def report_table(models: Dict[str, Dict[str, Any]]) -> Tuple[List[str], List[List[str]]]:
    header = ["metric"] + list(models)
    rows = []
    for section, key, name in ROWS:
        values = [models[m].get(section, {}).get(key) for m in models]
        if all(v is None for v in values):
            continue
        rows.append([name] + ["-" if v is None else f"{v:.3f}" for v in values])
    rows.append(["sentences"] + [str(models[m]["n_sentences"]) for m in models])
    return header, rows
