"""Scores of a coarse classifier on full papers with expert labels (MuLMS-AZ,
ART / CoreSC): the one definition used by ``benchmarks/fullpaper/bench_fullpaper.py``
and ``benchmarks/fullpaper/bench_fields.py``.

:func:`sentence_rows` turns papers (gold ``label`` / ``gold_labels``,
``heading``, ``section`` from ``rhetoric_section_tagger``) into one row per
sentence; :func:`score` scores one label per row:

* scored sentences: a gold coarse label, >= 25 characters and >= 4 words;
* **lenient**: the prediction is among the sentence's acceptable labels
  (``gold_labels``: a conclusion accepts ``result`` or ``other``);
* **single**: sentences with exactly one acceptable label among
  background / objective / method / result: accuracy, macro-F1 over those
  four, per-class F1, the confusion matrix;
* **echo**: per section category, among the single sentences whose gold
  label differs from the section's own label (introduction -> background,
  method -> method, results -> result), the share given the section's label
  (1.0: the model copies the section);
* **own work as background**: among the scored sentences whose acceptable
  labels are method and/or result only (the paper's own methods and
  findings), the share predicted ``background``.

:func:`mean_of` averages fold scores (sums the confusion matrices; echo and
own-work shares pooled over the folds' sentences).
"""
from typing import Dict, List, Optional, Sequence

import numpy

SINGLE_CLASSES = ("background", "objective", "method", "result")
SECTION_LABEL = {"introduction": "background", "related work": "background", "method": "method",
                 "results": "result"}
OWN_WORK = frozenset({"method", "result"})


MIN_CHARS, MIN_WORDS = 25, 4  # a scored sentence: fragments of the reader ("That is,", "Model.") are not


def is_full_sentence(text: str) -> bool:
    """At least ``MIN_CHARS`` characters and ``MIN_WORDS`` words: the
    sentences the full-paper scores count (and the demo shows neighbours of)."""
    text = text.strip()
    return len(text) >= MIN_CHARS and len(text.split()) >= MIN_WORDS


def sentence_rows(docs) -> List[Dict]:
    """One row per non-blank sentence of each paper (all sentences: context
    for the baselines), with what the baselines and :func:`score` need."""
    from ..extensions import get_doc_value, get_span_value
    from ..section_headings import feature_section

    rows = []
    for d, doc in enumerate(docs):
        sents = [s for s in doc.sents if s.text.strip()]
        sections = [feature_section(get_span_value(s, "section")) for s in sents]
        headings = [get_span_value(s, "heading") or "" for s in sents]
        runs, start = [], 0
        for i in range(1, len(sents) + 1):
            if i == len(sents) or headings[i] != headings[start]:
                runs.extend([(start, i)] * (i - start))
                start = i
        doc_id = get_doc_value(doc, "doc_id")
        for i, sent in enumerate(sents):
            gold = get_span_value(sent, "gold_labels") or []
            text = sent.text.strip()
            r0, r1 = runs[i]
            rows.append({
                "doc": d, "doc_id": doc_id, "fold": get_doc_value(doc, "fold"), "i": i, "text": text,
                "heading": headings[i], "section": sections[i], "gold": gold,
                "label": get_span_value(sent, "label"), "fine": get_span_value(sent, "fine_label"),
                "prev": sents[i - 1].text if i else "", "next": sents[i + 1].text if i + 1 < len(sents) else "",
                "pos_section": (i - r0) / max(1, r1 - r0), "idx_section": i - r0, "pos_paper": i / max(1, len(sents)),
                "scored": bool(gold) and is_full_sentence(text),
                "single": len(gold) == 1 and gold[0] in SINGLE_CLASSES,
            })
    return rows


def score(rows: Sequence[Dict], preds: Sequence[Optional[str]]) -> Dict:
    """The scores of one label per row (see the module docstring)."""
    from sklearn.metrics import confusion_matrix, f1_score

    scored = [(r, p) for r, p in zip(rows, preds) if r["scored"]]
    single = [(r, p) for r, p in scored if r["single"]]
    golds = [r["gold"][0] for r, _ in single]
    guess = [p or "none" for _, p in single]
    per_class = f1_score(golds, guess, labels=list(SINGLE_CLASSES), average=None, zero_division=0)
    echo = {}
    for section, own in SECTION_LABEL.items():
        differing = [(r, p) for r, p in single if r["section"] == section and r["gold"][0] != own]
        if differing:
            echo[section] = {"n": len(differing), "share": sum(p == own for _, p in differing) / len(differing)}
    own_work = [p for r, p in scored if set(r["gold"]) <= OWN_WORK]
    return {
        "n_scored": len(scored), "n_single": len(single),
        "lenient": sum(p in r["gold"] for r, p in scored) / max(1, len(scored)),
        "single_acc": sum(g == p for g, p in zip(golds, guess)) / max(1, len(single)),
        "single_macro_f1": float(numpy.mean(per_class)),
        "per_class_f1": {c: float(f) for c, f in zip(SINGLE_CLASSES, per_class)},
        "confusion": confusion_matrix(golds, guess, labels=list(SINGLE_CLASSES) + ["other"]).tolist(),
        "echo": echo,
        "own_work_as_background": {"n": len(own_work),
                                   "share": sum(p == "background" for p in own_work) / max(1, len(own_work))},
    }


def mean_of(folds: Dict[str, Dict]) -> Dict:
    """Mean of fold scores (see the module docstring)."""
    keys = ("lenient", "single_acc", "single_macro_f1")
    out = {k: float(numpy.mean([f[k] for f in folds.values()])) for k in keys}
    out["per_class_f1"] = {c: float(numpy.mean([f["per_class_f1"][c] for f in folds.values()]))
                           for c in SINGLE_CLASSES}
    out["confusion"] = numpy.sum([f["confusion"] for f in folds.values()], axis=0).tolist()
    echo: Dict[str, Dict] = {}
    for f in folds.values():
        for section, e in f["echo"].items():
            acc = echo.setdefault(section, {"n": 0, "echoed": 0.0})
            acc["n"] += e["n"]
            acc["echoed"] += e["share"] * e["n"]
    out["echo"] = {s: {"n": e["n"], "share": e["echoed"] / e["n"]} for s, e in echo.items()}
    own = [f["own_work_as_background"] for f in folds.values() if "own_work_as_background" in f]
    if own:
        n = sum(o["n"] for o in own)
        out["own_work_as_background"] = {"n": n, "share": sum(o["share"] * o["n"] for o in own) / max(1, n)}
    return out
