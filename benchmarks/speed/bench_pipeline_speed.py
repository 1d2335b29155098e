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

Memory on long texts: ``pipeline_speed_memory.py``; the comparison with the
tools people use (``--compare``): ``pipeline_speed_compare.py``.

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
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import spacy  # noqa: E402
import typer  # noqa: E402
from pipeline_speed_common import CONFIG, DATA, INIT_CORPUS, ROOT, load_abstracts, set_threads, timed  # noqa: E402
from pipeline_speed_compare import compare  # noqa: E402
from pipeline_speed_memory import memory_child, memory_rows  # noqa: E402
from spacy.training import Corpus  # noqa: E402
from wasabi import msg  # noqa: E402

import spacy_rhetoric  # noqa: F401,E402
from spacy_rhetoric.evaluation.metrics import raw_transformer_vectors  # noqa: E402
from spacy_rhetoric.util import load_parser, resolve_hf_model  # noqa: E402

TRF_COMPONENTS = ["transformer", "rhetoric_function_classifier", "rhetoric_sentence_encoder"]
PARSER_EXCLUDE = ["tagger", "attribute_ruler", "lemmatizer", "ner", "senter"]


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


def hf_load_seconds(model_name: str) -> float:
    from transformers import AutoModel, AutoTokenizer

    path = resolve_hf_model(model_name)
    t0 = time.perf_counter()
    AutoTokenizer.from_pretrained(path)
    AutoModel.from_pretrained(path)
    return time.perf_counter() - t0


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
    report["memory"] = memory_rows(__file__, nlp, sizes, threads, clean_trf_data, long_text_pieces, child_timeout,
                                   report, out)
    report["machine"]["loadavg_end"] = os.getloadavg()
    out.write_text(json.dumps(report, indent=2) + "\n")
    msg.good(f"wrote {out}")


if __name__ == "__main__":
    typer.run(main)
