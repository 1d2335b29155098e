"""The ``--compare`` mode of ``bench_pipeline_speed.py``.

Compare (``--compare``): on the same CSAbstruct dev texts, in one
process, repeats interleaved (the order of the sides rotates each repeat):
``nlp.pipe`` of the demo pipeline (``.demo/pipeline``: en_core_web_sm tok2vec +
tagger + parser + lemmatizer, phrase labeler, tok2vec classifier and encoder),
of the best-profile pipeline (``spacy_rhetoric.apps.assemble`` of en_core_web_sm +
phrase labeler + an untrained ``rhetoric_trf.cfg`` classifier and encoder
sharing one MiniLM transformer), of en_core_web_sm alone, and
sentence-transformers ``encode`` (``spacy_rhetoric.ml.st_models``, same MiniLM
weights, model loaded once, outside the clock) of the sentences en_core_web_sm
found. Then one component-wise pass per pipeline (each component's ``pipe``
timed on the previous one's output) gives the parser's share, en_core_web_sm's
``senter`` is timed on the same docs as the alternative boundary setter, and
the share of sentences the phrase labeler could label at all (a listed n-gram
anywhere in the sentence: the only ones whose root it needs) is counted.
"""
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List

import spacy
from pipeline_speed_common import CONFIG, DATA, INIT_CORPUS, ROOT, load_abstracts, set_threads, timed
from spacy.training import Corpus
from wasabi import msg

from spacy_rhetoric.util import load_parser

DEMO_PIPELINE = ROOT / ".demo" / "pipeline"
PHRASES = ROOT.parent / "shared" / "data" / "iwatsuki2021-fe-database-cl"


def init_examples(nlp, n: int) -> List:
    """Examples of the first ``n`` CSAbstruct train abstracts (gold sentences
    and labels; ``corpus/csabstruct_train.spacy`` when converted, else the jsonl)."""
    from spacy.training import Example

    from spacy_rhetoric.readers.csabstruct import read_csabstruct

    if INIT_CORPUS.is_file():
        return list(Corpus(str(INIT_CORPUS), limit=n)(nlp))
    return [Example(nlp.make_doc(d.text), d) for d in read_csabstruct(DATA / "train.jsonl", nlp.vocab, limit=n)]


def best_pipeline(init_docs: int):
    """en_core_web_sm + phrase labeler + the untrained rhetoric_trf.cfg
    classifier and encoder, through ``spacy_rhetoric.apps.assemble`` (one shared
    transformer)."""
    from spacy_rhetoric.apps.assemble import CLASSIFIER, ENCODER, assemble

    config = spacy.util.load_config(CONFIG, interpolate=True)
    trf_nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    trf_nlp.initialize(lambda: init_examples(trf_nlp, init_docs))
    nlp, report = assemble("en_core_web_sm", [(trf_nlp, CLASSIFIER), (trf_nlp, ENCODER)], phrases=PHRASES)
    return nlp, report


def componentwise(nlp, texts: List[str], batch_size: int) -> Dict[str, float]:
    """Wall seconds of the tokenizer and of each component's ``pipe`` on the
    previous component's output (docs materialised between components)."""
    out: Dict[str, float] = {}
    docs, out["tokenizer"], _ = timed(lambda: [nlp.make_doc(t) for t in texts])
    for name, proc in nlp.pipeline:
        docs, out[name], _ = timed(lambda: list(proc.pipe(docs, batch_size=batch_size)))
    return out


def candidate_share(nlp, docs) -> Dict[str, int]:
    """Sentences with a listed n-gram anywhere (the only ones the phrase
    labeler can label, so the only ones whose dependency root it needs) and
    sentences it labelled."""
    labeler = nlp.get_pipe("rhetoric_phrase_labeler")
    key, table, lengths = labeler.token_key(), labeler.table, sorted({len(k) for k in labeler.table})
    n = cand = labelled = 0
    for doc in docs:
        for sent in doc.sents:
            n += 1
            if has_listed_ngram(sent, key, table, lengths):
                cand += 1
            labelled += sent._.phrase_label is not None
    return {"sentences": n, "with_listed_ngram": cand, "labelled": labelled}


def has_listed_ngram(sent, key, table, lengths) -> bool:
    keys = [key(t) for t in sent]
    return any(tuple(keys[i:i + n]) in table for n in lengths for i in range(len(keys) - n + 1))


def sentence_labels(doc) -> Dict:
    return {(s.start_char, s.end_char): s._.phrase_label for s in doc.sents if s._.phrase_label is not None}


def partial_parse_labels(senter_nlp, parse_nlp, labeler, texts: List[str], batch_size: int, docs_out: bool = False):
    """The faster sentence boundaries: en_core_web_sm's senter for the boundaries (no
    parser), then the parser only on the sentences holding a listed n-gram
    (each as its own Doc), whose root the labeler needs. Returns
    ``{(text index, (start_char, end_char)): label}``, or with ``docs_out`` the
    senter sentences (for counting)."""
    key, table = labeler.token_key(), labeler.table
    lengths = sorted({len(k) for k in table})
    docs = list(senter_nlp.pipe(texts, batch_size=batch_size))
    cands = [(i, s) for i, d in enumerate(docs) for s in d.sents if has_listed_ngram(s, key, table, lengths)]
    parsed = parse_nlp.pipe([s.as_doc() for _, s in cands], batch_size=batch_size)
    labels = {}
    for (i, s), pdoc in zip(cands, parsed):
        found = labeler.match_sentence(pdoc[:], key)
        if found is not None:
            labels[(i, (s.start_char, s.end_char))] = found[0]
    return [s for d in docs for s in d.sents] if docs_out else labels


def compare(threads: int, repeats: int, batch_size: int, st_batch_size: int, init_docs: int,
            limit: int, out: Path) -> None:
    from spacy_rhetoric.ml.st_models import encode, load_sentence_transformer

    n_threads = set_threads(threads)
    report: Dict = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "command": " ".join(sys.argv),
                    "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                                "loadavg_start": os.getloadavg()}, "torch_threads": n_threads}
    abstracts = load_abstracts(DATA / "dev.jsonl")
    texts = [" ".join(s) for s in (abstracts[:limit] if limit else abstracts)]
    sm = load_parser("en_core_web_sm", exclude=["ner"])
    pipes = {"en_core_web_sm": sm}
    pipes["sm_labeler"] = load_parser("en_core_web_sm", exclude=["ner"])
    labeler = pipes["sm_labeler"].add_pipe("rhetoric_phrase_labeler")
    labeler.initialize(phrases=str(PHRASES), nlp=pipes["sm_labeler"])
    senter_nlp = load_parser("en_core_web_sm", exclude=["ner", "parser"])
    senter_nlp.enable_pipe("senter")
    parse_nlp = load_parser("en_core_web_sm", exclude=["ner", "tagger", "attribute_ruler", "lemmatizer", "senter"])
    if DEMO_PIPELINE.is_dir():
        pipes["demo"] = spacy.load(DEMO_PIPELINE)
    pipes["best_trf"], report["best_trf_assembly"] = best_pipeline(init_docs)
    report["pipelines"] = {k: v.pipe_names for k, v in pipes.items()}
    st = load_sentence_transformer("sentence-transformers/all-MiniLM-L6-v2", max_length=256)
    sentences = [s.text for d in sm.pipe(texts, batch_size=batch_size) for s in d.sents]
    report["input"] = {"abstracts": len(texts), "chars": sum(map(len, texts)), "sentences_en_core_web_sm": len(sentences)}
    sides = {name: (lambda p=p: list(p.pipe(texts, batch_size=batch_size))) for name, p in pipes.items()}
    sides["st_encode"] = lambda: encode(st, sentences, batch_size=st_batch_size)
    sides["senter_partial_parse_labeler"] = lambda: partial_parse_labels(
        senter_nlp, parse_nlp, labeler, texts, batch_size, docs_out=True)
    for fn in sides.values():  # warm-up, excluded
        if isinstance(fn(), list):
            pass
    names = list(sides)
    runs: Dict[str, List[float]] = {n: [] for n in names}
    n_sents: Dict[str, int] = {}
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            res, wall, _ = timed(sides[name])
            runs[name].append(wall)
            n_sents[name] = len(res) if name in ("st_encode", "senter_partial_parse_labeler") else sum(
                1 for d in res for _ in d.sents)
        msg.info(f"repeat {r}: " + ", ".join(f"{n} {runs[n][-1]:.2f}s" for n in names) + f"; load {os.getloadavg()}")
    med = {n: statistics.median(v) for n, v in runs.items()}
    report["wall_s"] = runs
    report["sentences"] = n_sents
    report["sents_per_s_median"] = {n: round(n_sents[n] / med[n], 1) for n in names}
    # same texts on every side: ratio of sentences/s on en_core_web_sm's sentences = inverse time ratio
    report["ratios_vs_st_encode"] = {n: round(med["st_encode"] / med[n], 3) for n in names}
    report["ratios_vs_en_core_web_sm"] = {n: round(med["en_core_web_sm"] / med[n], 3) for n in names}
    report["paired_ratio_vs_st_encode"] = {n: [round(a / b, 3) for a, b in zip(runs["st_encode"], runs[n])]
                                           for n in names}
    # component-wise: parser share, senter as the alternative boundary setter
    comp = {}
    for name, p in pipes.items():
        comp[name] = componentwise(p, texts, batch_size)
    comp["en_core_web_sm_senter_no_parser"] = componentwise(senter_nlp, texts, batch_size)
    report["componentwise_wall_s"] = {k: {c: round(t, 3) for c, t in v.items()} for k, v in comp.items()}
    report["parser_share"] = {k: round(v["parser"] / sum(v.values()), 4) for k, v in comp.items() if "parser" in v}
    labelled_docs = list(pipes["sm_labeler"].pipe(texts, batch_size=batch_size))
    report["phrase_labeler_candidates"] = candidate_share(pipes["sm_labeler"], labelled_docs)
    full = {(i, k): v for i, d in enumerate(labelled_docs) for k, v in sentence_labels(d).items()}
    part = partial_parse_labels(senter_nlp, parse_nlp, labeler, texts, batch_size)
    report["partial_parse_vs_full_parse_labels"] = {
        "labelled_full": len(full), "labelled_partial": len(part),
        "same_sentence_and_label": sum(1 for k, v in full.items() if part.get(k) == v),
        "identical": full == part}
    report["machine"]["loadavg_end"] = os.getloadavg()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    for key in ["sents_per_s_median", "ratios_vs_st_encode", "ratios_vs_en_core_web_sm", "parser_share",
                "phrase_labeler_candidates"]:
        msg.info(f"{key}: {report[key]}")
    msg.good(f"wrote {out}")
