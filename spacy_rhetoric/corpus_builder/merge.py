"""The merge of a label build (deterministic, rerun in full on every build):
shards in input-key order (``jobs.merge.shard_records``), de-duplication, the document-disjoint split
(``splits.split_doc_ids`` by paper id, stratified by label)
and the train/valid ``.jsonl`` + ``.spacy`` outputs, each written to a
temporary file and renamed into place."""
import hashlib
import json
import unicodedata
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Sequence

from spacy.language import Language
from spacy.tokens import Doc, DocBin

from .. import extensions as ext
from ..io import atomic_path
from ..jobs.inputs import InputFile
from ..jobs.merge import shard_records
from ..pipeline.single_sentence import sentence_doc
from ..readers.splits import split_doc_ids
from .settings import OUTPUT_NAMES


def normalise_text(text: str) -> str:
    """The de-duplication key: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _dedup(records: Iterable[Dict[str, Any]], counter: Counter) -> Iterator[Dict[str, Any]]:
    seen = set()
    for rec in records:
        key = hashlib.blake2b(normalise_text(rec["text"]).encode("utf8"), digest_size=16).digest()
        if key in seen:
            counter["duplicates"] += 1
            continue
        seen.add(key)
        yield rec


def valid_papers(papers: Sequence[str], labels: Sequence[str], *, seed: int = 0,
                 valid_fraction: float = 0.2) -> List[str]:
    """The validation papers: the test side of ``split_doc_ids`` (one item per
    kept sentence, grouped by paper, stratified by label) with a train share
    of ``1 - valid_fraction``."""
    return split_doc_ids(list(papers), share=1.0 - valid_fraction, seed=seed, labels=list(labels))[1]


def record_doc(nlp: Language, rec: Dict[str, Any]) -> Doc:
    """One Doc per labeled sentence, with its gold ``label`` (set_sent_labels),
    evidence n-gram, section, sid and paper id as its extension values."""
    doc = sentence_doc(nlp, rec["text"])
    sents = [doc[:]]
    ext.set_sent_labels(doc, [rec["label"]])
    ext.set_span_values(doc, ext.PHRASE_LABEL, sents, [rec["label"]])
    start, end = rec.get("ngram_start"), rec.get("ngram_end")
    if start is not None and end is not None and 0 <= start < end <= len(doc):
        ext.set_span_values(doc, ext.PHRASE_MATCH, sents, [(start, end)])
    if rec.get("section") is not None:
        ext.set_span_values(doc, ext.SECTION, sents, [rec["section"]])
    if rec.get("sid") is not None:
        ext.set_span_values(doc, ext.SID, sents, [rec["sid"]])
    ext.set_doc_value(doc, ext.DOC_ID, rec["paper_id"])
    return doc


def output_paths(out_dir: Path) -> Dict[str, Path]:
    """``train_jsonl``, ``train_spacy``, ``valid_jsonl``, ``valid_spacy``."""
    return {f"{name}_{ext_}": out_dir / f"{name}.{ext_}" for name in OUTPUT_NAMES for ext_ in ("jsonl", "spacy")}


def merge_shards(
    out_dir: Path,
    inputs: Sequence[InputFile],
    shard_dir: Path,
    tokenizer_nlp: Language,
    *,
    seed: int = 0,
    valid_fraction: float = 0.2,
) -> Dict[str, Any]:
    """De-duplicate, split and write train/valid JSONL + .spacy. Two passes
    over the shards; memory holds one hash and paper id per kept sentence."""
    counts: Counter = Counter()
    papers, labels = [], []
    for rec in _dedup(shard_records(shard_dir, inputs), counts):
        papers.append(rec["paper_id"])
        labels.append(rec["label"])
    n_papers = len(set(papers))
    valid = set(valid_papers(papers, labels, seed=seed, valid_fraction=valid_fraction))
    del papers, labels

    outputs = output_paths(out_dir)
    docbins = {name: DocBin(attrs=["ORTH", "SENT_START"], store_user_data=True) for name in OUTPUT_NAMES}
    per_label = {name: Counter() for name in OUTPUT_NAMES}
    split_papers = {name: set() for name in OUTPUT_NAMES}
    with ExitStack() as stack:
        handles = {
            name: stack.enter_context(atomic_path(outputs[f"{name}_jsonl"])).open("w", encoding="utf8")
            for name in OUTPUT_NAMES
        }
        for fh in handles.values():
            stack.callback(fh.close)
        for rec in _dedup(shard_records(shard_dir, inputs), Counter()):
            name = "valid" if rec["paper_id"] in valid else "train"
            rec = dict(rec, split=name)
            handles[name].write(json.dumps(rec, ensure_ascii=False) + "\n")
            docbins[name].add(record_doc(tokenizer_nlp, rec))
            per_label[name][rec["label"]] += 1
            split_papers[name].add(rec["paper_id"])
    for name in OUTPUT_NAMES:
        with atomic_path(outputs[f"{name}_spacy"]) as tmp:
            tmp.write_bytes(docbins[name].to_bytes())
    total = per_label["train"] + per_label["valid"]
    split_info = {
        "method": "spacy_rhetoric.readers.splits.split_doc_ids by paper, stratified by label "
                  "(sklearn StratifiedGroupKFold, round(1 / valid_fraction) folds, fold 0 = validation)",
        "seed": seed,
        "valid_fraction": valid_fraction,
    }
    if n_papers and not valid:
        split_info["note"] = f"only {n_papers} papers: everything is training data"
    return {
        "duplicates_removed": counts["duplicates"],
        "labeled_kept": sum(total.values()),
        "n_labels": len(total),
        "per_label": dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))),
        "split": dict(
            split_info,
            dedup="normalised text (NFKC, case-folded, whitespace collapsed); first copy in input-key, sentence order kept",
            train_sentences=sum(per_label["train"].values()),
            valid_sentences=sum(per_label["valid"].values()),
            train_papers=len(split_papers["train"]),
            valid_papers=len(split_papers["valid"]),
            per_label_train=dict(sorted(per_label["train"].items())),
            per_label_valid=dict(sorted(per_label["valid"].items())),
        ),
        "outputs": {key: str(path) for key, path in outputs.items()},
    }
