"""Speed and memory of the full shared-transformer pipeline.

Pipeline: ``tok2vec`` + ``parser`` sourced from ``en_core_web_sm``
(``spacy_rhetoric.util.load_parser``) in front of the components of
``configs/rhetoric_trf.cfg`` (one spacy-transformers ``transformer`` with the
local MiniLM-L6 weights, ``rhetoric_function_classifier`` and
``rhetoric_sentence_encoder`` listening to it). The config's ``sentencizer``
is removed, so the parser's sentence boundaries are the ones the classifier
and encoder see. Without ``--model`` the config is built with
``spacy.util.load_model_from_config`` and initialized on ``--init-docs``
CSAbstruct train abstracts (speed does not depend on training); with
``--model PATH`` a trained pipeline is loaded and its components are sourced.

Speed: the CSAbstruct dev abstracts (sentences joined with a space, i.e.
raw text) go through the pipeline; the sentences the *parser* produced are
then encoded by ``spacy_rhetoric.evaluation.metrics.raw_transformer_vectors``
(AutoModel + attention-mask mean pooling, batched), so both sides see the
same sentence texts. Same process, same ``torch.set_num_threads``, a
warm-up pass on each side is excluded, repeats alternate the two sides.
The baseline call loads the HF model each time: that load is timed on its
own and subtracted (reported too). The parser / transformer+listeners split
is measured by running the two halves of the same pipeline separately.

Memory: each document size runs in a fresh child process (peak RSS from
``resource.getrusage`` is per process), which loads the same pipeline from a
temporary directory and processes one document of N characters built from
CSAbstruct train abstracts (paragraphs separated by a blank line).

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

    python benchmarks/speed/bench_pipeline_speed.py --compare --threads 1 --repeats 3 \
        --out benchmarks/speed/results/pipeline_compare.json

Usage:
    python benchmarks/speed/bench_pipeline_speed.py [--threads 0] [--repeats 3] \
        [--sizes 100000,250000,500000,1000000] [--model PATH] \
        [--out benchmarks/speed/results/pipeline_speed.json]
"""
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import spacy  # noqa: E402
import typer  # noqa: E402
from spacy.training import Corpus  # noqa: E402
from wasabi import msg  # noqa: E402

import spacy_rhetoric  # noqa: F401,E402
from spacy_rhetoric.evaluation.metrics import raw_transformer_vectors  # noqa: E402
from spacy_rhetoric.util import load_parser, resolve_hf_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "csabstruct"
CONFIG = ROOT / "configs" / "rhetoric_trf.cfg"
INIT_CORPUS = ROOT / "corpus" / "csabstruct_train.spacy"
TRF_COMPONENTS = ["transformer", "rhetoric_function_classifier", "rhetoric_sentence_encoder"]
PARSER_EXCLUDE = ["tagger", "attribute_ruler", "lemmatizer", "ner", "senter"]


def set_threads(n: int) -> int:
    import torch

    n = n or os.cpu_count() or 1
    torch.set_num_threads(n)
    return torch.get_num_threads()


def rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:  # pragma: no cover
        return float("nan")


def peak_rss_mb() -> float:
    # Linux: ru_maxrss in KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_abstracts(path: Path) -> List[List[str]]:
    with path.open(encoding="utf8") as f:
        return [json.loads(line)["sentences"] for line in f if line.strip()]


def build_pipeline(model: Optional[Path], init_docs: int, config_path: Path = CONFIG):
    if model is not None:
        trf_nlp = spacy.load(model)
        missing = [c for c in TRF_COMPONENTS if c not in trf_nlp.pipe_names]
        if missing:
            raise ValueError(f"{model}: pipeline lacks components {missing}")
    else:
        config = spacy.util.load_config(config_path, interpolate=True)
        trf_nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
        examples = list(Corpus(str(INIT_CORPUS), limit=init_docs)(trf_nlp))
        trf_nlp.initialize(lambda: examples)
    for name in list(trf_nlp.pipe_names):
        if name not in TRF_COMPONENTS:
            trf_nlp.remove_pipe(name)
    parser_nlp = load_parser("en_core_web_sm", exclude=PARSER_EXCLUDE)
    # Parser first (its tok2vec and parser sourced together keep their listener
    # link), then the transformer and its two listeners.
    nlp = spacy.blank("en", vocab=parser_nlp.vocab)
    nlp.tokenizer = parser_nlp.tokenizer
    for name in parser_nlp.pipe_names:
        nlp.add_pipe(name, source=parser_nlp)
    for name in TRF_COMPONENTS:
        nlp.add_pipe(name, source=trf_nlp)
    return nlp, parser_nlp


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def hf_load_seconds(model_name: str) -> float:
    from transformers import AutoModel, AutoTokenizer

    path = resolve_hf_model(model_name)
    t0 = time.perf_counter()
    AutoTokenizer.from_pretrained(path)
    AutoModel.from_pretrained(path)
    return time.perf_counter() - t0


def memory_child(model_dir: str, size: int, threads: int, clean: bool = False, piece_chars: int = 0) -> Dict:
    """Runs in a fresh process: load, warm up, process one N-character doc.
    ``clean``: spaCy's ``doc_cleaner`` at the end drops ``doc._.trf_data``
    (the transformer output, no longer needed once the listeners ran).
    ``piece_chars`` > 0: ``spacy_rhetoric.process_long_text`` with pieces of at
    most that many characters instead of ``nlp(text)``."""
    set_threads(threads)
    nlp = spacy.load(model_dir)
    if clean:
        nlp.add_pipe("doc_cleaner", config={"attrs": {"_.trf_data": None}, "silent": True})
    abstracts = load_abstracts(DATA / "train.jsonl")
    paragraphs, total = [], 0
    for sents in abstracts:
        p = " ".join(sents)
        paragraphs.append(p)
        total += len(p) + 2
        if total >= size:
            break
    if total < size:
        raise ValueError(f"CSAbstruct train has only {total} characters (< {size})")
    text = "\n\n".join(paragraphs)[:size]
    nlp(" ".join(abstracts[-1]))  # warm-up
    rss_before = rss_mb()
    peak_before = peak_rss_mb()
    nlp.max_length = len(text) + 1
    # ru_maxrss already holds the load-time peak, so also sample the current
    # RSS every 20 ms while the document is processed
    import threading

    samples = [rss_before]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            samples.append(rss_mb())
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    if piece_chars:
        from spacy_rhetoric.long_docs import process_long_text

        doc, wall, cpu = timed(lambda: process_long_text(nlp, text, max_chars=piece_chars))
    else:
        doc, wall, cpu = timed(lambda: nlp(text))
    stop.set()
    sampler.join()
    n_sents = sum(1 for _ in doc.sents)
    with_vec = sum(1 for s in doc.sents if s._.rhetoric_vector is not None)
    n_tokens = len(doc)
    rss_after_doc = rss_mb()
    peak_after = peak_rss_mb()
    del doc
    import gc

    gc.collect()
    return {
        "doc_cleaner_trf_data": clean,
        "process_long_text_max_chars": piece_chars,
        "chars": len(text), "tokens_approx_words": len(text.split()), "sentences": n_sents,
        "sentences_with_vector": with_vec, "tokens": n_tokens,
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "rss_before_mb": round(rss_before, 1), "peak_rss_before_mb": round(peak_before, 1),
        "rss_with_doc_mb": round(rss_after_doc, 1), "peak_rss_mb": round(peak_after, 1),
        "rss_after_free_mb": round(rss_mb(), 1),
        "peak_growth_mb": round(peak_after - peak_before, 1),
        "sampled_peak_rss_mb": round(max(samples), 1),
        "sampled_peak_growth_mb": round(max(samples) - rss_before, 1),
    }


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


def main(
    threads: int = typer.Option(0, help="torch threads for both sides; 0 = all cores"),
    repeats: int = typer.Option(3, help="alternating timed repeats of each side"),
    batch_size: int = typer.Option(16, help="docs per nlp.pipe batch"),
    hf_batch_size: int = typer.Option(64, help="sentences per raw MiniLM batch"),
    init_docs: int = typer.Option(20, help="CSAbstruct train abstracts for initialize"),
    limit: int = typer.Option(0, help="use only the first N dev abstracts (0 = all)"),
    sizes: str = typer.Option("100000,250000,500000,1000000", help="memory doc sizes, chars"),
    child_timeout: int = typer.Option(900, help="seconds per memory child"),
    model: Optional[Path] = typer.Option(None, help="trained rhetoric_trf pipeline to source"),
    config: Path = typer.Option(CONFIG, help="config to build the pipeline from (without --model)"),
    max_windows_per_pass: Optional[int] = typer.Option(
        None, help="override the transformer's max_windows_per_pass (0 = all windows of a doc at once)"),
    skip_speed: bool = typer.Option(False, "--skip-speed", help="memory rows only"),
    long_text_pieces: int = typer.Option(
        0, help="memory: process_long_text with pieces of at most N chars (0 = nlp(text))"),
    clean_trf_data: bool = typer.Option(
        False, "--clean-trf-data", help="memory: add doc_cleaner dropping doc._.trf_data at the end"),
    out: Path = typer.Option(ROOT / "benchmarks" / "speed" / "results" / "pipeline_speed.json"),
    memory_child_args: Optional[str] = typer.Option(None, "--memory-child", hidden=True),
    compare_mode: bool = typer.Option(False, "--compare", help="demo vs MiniLM pipeline vs sentence-transformers "
                                      "encode vs en_core_web_sm alone, parser share, senter (no memory rows)"),
):
    if memory_child_args:
        model_dir, size, thr, clean, piece = memory_child_args.split("|")
        print(json.dumps(memory_child(model_dir, int(size), int(thr), clean == "1", int(piece))))
        return
    if compare_mode:
        compare(threads, repeats, batch_size, hf_batch_size, init_docs, limit, out)
        return
    n_threads = set_threads(threads)
    report: Dict = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                    "loadavg_start": os.getloadavg()},
        "command": " ".join(sys.argv),
        "torch_threads": n_threads,
    }
    msg.info(f"torch threads {n_threads}, load average {os.getloadavg()}")
    nlp, parser_nlp = build_pipeline(model, init_docs, config)
    report["pipeline"] = nlp.pipe_names
    trf_model = nlp.get_pipe("transformer").model
    if max_windows_per_pass is not None:
        if "max_windows_per_pass" not in trf_model.attrs:
            raise ValueError("the transformer model is not spacy_rhetoric.ChunkedTransformerModel.v1")
        trf_model.attrs["max_windows_per_pass"] = int(max_windows_per_pass)
    report["max_windows_per_pass"] = trf_model.attrs.get("max_windows_per_pass")
    report["memory_clean_trf_data"] = clean_trf_data
    report["memory_long_text_pieces"] = long_text_pieces
    msg.info(f"transformer max_windows_per_pass = {report['max_windows_per_pass']}")
    report["pipeline_source"] = str(model) if model else f"{config.name} initialized on {init_docs} CSAbstruct train abstracts (untrained weights on top of MiniLM)"
    msg.good(f"pipeline {nlp.pipe_names}")

    if skip_speed:
        repeats = 0
    abstracts = load_abstracts(DATA / "dev.jsonl")
    if limit:
        abstracts = abstracts[:limit]
    texts = [" ".join(s) for s in abstracts]
    report["speed_input"] = {"abstracts": len(texts), "chars": sum(map(len, texts)),
                             "gold_sentences": sum(map(len, abstracts))}

    # sanity: the sourced parser gives the same boundaries as the parser pipeline alone
    probe = texts[:20]
    a = [[s.text for s in d.sents] for d in nlp.pipe(probe)]
    b = [[s.text for s in d.sents] for d in parser_nlp.pipe(probe)]
    if a != b:
        raise RuntimeError("sourced parser sentences differ from en_core_web_sm's")
    # warm-up (excluded)
    list(nlp.pipe(texts[:50], batch_size=batch_size))
    docs = list(nlp.pipe(texts[:5], batch_size=batch_size))
    warm_sents = [s.text for d in docs for s in d.sents]
    raw_transformer_vectors(warm_sents * 10, batch_size=hf_batch_size, progress=False)

    parser_names = [n for n in nlp.pipe_names if n not in TRF_COMPONENTS]
    runs = []
    sentences: List[str] = []
    for r in range(repeats):
        docs, wall, cpu = timed(lambda: list(nlp.pipe(texts, batch_size=batch_size)))
        sents = [s.text for d in docs for s in d.sents]
        missing = sum(1 for d in docs for s in d.sents if s._.rhetoric_vector is None
                      or s._.rhetoric_label is None)
        if r == 0:
            sentences = sents
        elif sents != sentences:
            raise RuntimeError("pipeline sentences changed between repeats")
        load_s = hf_load_seconds("sentence-transformers/all-MiniLM-L6-v2")
        vecs, b_wall, b_cpu = timed(lambda: raw_transformer_vectors(
            sentences, batch_size=hf_batch_size, progress=False))
        assert vecs.shape[0] == len(sentences)
        # split: parser half, then the transformer half on the parsed docs
        with nlp.select_pipes(enable=parser_names):
            pdocs, p_wall, p_cpu = timed(lambda: list(nlp.pipe(texts, batch_size=batch_size)))

        def run_trf():
            ds = pdocs
            for name in TRF_COMPONENTS:
                ds = list(nlp.get_pipe(name).pipe(ds, batch_size=batch_size))
            return ds

        _, t_wall, t_cpu = timed(run_trf)
        n = len(sentences)
        run = {
            "sentences": n, "sentences_missing_outputs": missing,
            "pipeline_wall_s": round(wall, 3), "pipeline_cpu_s": round(cpu, 3),
            "baseline_wall_s_incl_load": round(b_wall, 3), "baseline_cpu_s_incl_load": round(b_cpu, 3),
            "hf_load_s": round(load_s, 3),
            "baseline_wall_s": round(b_wall - load_s, 3),
            "pipeline_sents_per_s": round(n / wall, 2),
            "baseline_sents_per_s": round(n / (b_wall - load_s), 2),
            "baseline_sents_per_s_incl_load": round(n / b_wall, 2),
            "ratio": round((n / wall) / (n / (b_wall - load_s)), 4),
            "split_parser_wall_s": round(p_wall, 3), "split_trf_components_wall_s": round(t_wall, 3),
            "split_parser_share": round(p_wall / (p_wall + t_wall), 4),
            "loadavg": os.getloadavg(),
        }
        msg.info(f"repeat {r}: {json.dumps(run)}")
        runs.append(run)
    report["speed_runs"] = runs
    report["speed_median"] = {} if not runs else {
        k: round(statistics.median(r[k] for r in runs), 4)
        for k in ["pipeline_sents_per_s", "baseline_sents_per_s", "ratio",
                  "baseline_sents_per_s_incl_load", "split_parser_share"]
    }
    msg.good(f"speed median {report['speed_median']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")

    # memory: fresh process per size
    mem = []
    with tempfile.TemporaryDirectory() as tmp:
        nlp.to_disk(tmp)
        for size in [int(s) for s in sizes.split(",") if s.strip()]:
            cmd = [sys.executable, __file__, "--memory-child",
                   f"{tmp}|{size}|{threads}|{int(clean_trf_data)}|{long_text_pieces}"]
            msg.info(f"memory {size:,} chars, load average {os.getloadavg()}")
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=child_timeout)
            except subprocess.TimeoutExpired:
                mem.append({"chars": size, "error": f"timeout after {child_timeout} s"})
                msg.warn(f"{size}: timeout")
                break
            if res.returncode != 0:
                mem.append({"chars": size, "error": res.stderr[-2000:]})
                msg.fail(f"{size}: {res.stderr[-500:]}")
                break
            row = json.loads(res.stdout.strip().splitlines()[-1])
            row["loadavg_after"] = os.getloadavg()
            msg.info(json.dumps(row))
            mem.append(row)
            report["memory"] = mem
            out.write_text(json.dumps(report, indent=2) + "\n")
    report["memory"] = mem
    report["machine"]["loadavg_end"] = os.getloadavg()
    out.write_text(json.dumps(report, indent=2) + "\n")
    msg.good(f"wrote {out}")


if __name__ == "__main__":
    typer.run(main)
