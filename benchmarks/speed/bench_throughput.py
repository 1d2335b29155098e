"""Throughput of ``annotate`` against the tools people use: sentences/s.

Three sides, in one process, on the same sentences:

- ``annotate``: the library function behind ``spacy-rhetoric annotate``
  (``spacy_rhetoric.apps.annotate.annotate_corpus``, ``n_process=1``, or ``--n-process N`` worker processes) over the
  papers of ``paper-formats/`` (every format: GROBID TEI, JATS, S2ORC; the
  folder's README left out) with ``--pipeline`` (default ``.demo/pipeline``
  of the checkout, which ``make demo`` writes; without one, ``--pipeline`` is
  required). Its own clock (``summary["timing"]``) excludes loading the
  pipeline and merging the shards, and includes reading and parsing the paper
  files, the whole pipeline and writing the shards; "wall" is the whole call.
  Every run writes to a new folder (nothing resumed).
- ``encode``: plain sentence-transformers ``SentenceTransformer.encode`` of
  all-MiniLM-L6-v2 (``ml.st_models.load_sentence_transformer`` of the offline
  copy, ``util.resolve_hf_model``; mean pooling, the model's own 256-token
  limit, batches of 32) over the sentence texts of the first ``annotate``
  run; the model is loaded, and warmed up on one batch, outside the clock
  (as ``annotate`` is on one paper file before the first run).
- ``tfidf``: scikit-learn ``TfidfVectorizer`` (1-2-grams, sublinear tf) +
  ``LogisticRegression`` fitted on the CSAbstruct train sentences (outside the
  clock; its time is reported) labelling the same sentences.

- ``encode_bf16`` (with ``--encode-bf16``): the same ``encode`` under torch's
  bfloat16 autocast, the format the pipeline's fine-tuned member predicts in
  on CPUs with AMX or AVX-512 BF16 (``FinetunedMember.v1`` ``precision``).

Each side runs twice, the order alternating (annotate, encode, tfidf, then
tfidf, encode, annotate); the table gives both runs and their median, and the
ratio annotate / encode. Threads (torch, OMP/MKL variables), thinc's ops (numpy's
BLAS or blis, ``util.use_numpy_blas``; ``SPACY_RHETORIC_BLIS=1`` for blis), the load average
before and after each run and the machine are written with the figures.
``--gpu-id N``: ``util.use_device(N)`` first (``spacy.require_gpu``: the
pipeline and the encoder on GPU N; scikit-learn stays on the CPU), and every
figure is labelled with ``torch.cuda.get_device_name(N)``. ``--components``:
then a component-wise pass (``component_seconds``: reading the papers, then
each component's ``pipe`` timed on the previous one's output) says where the
time goes.

    OMP_NUM_THREADS=2 python benchmarks/speed/bench_throughput.py --pipeline .demo/pipeline \
        --out benchmarks/speed/results/throughput.json [--gpu-id 0]
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[2]
FORMAT_DIRS = ("grobid-tei", "jats", "s2orc")
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SIDES = ("annotate", "encode", "tfidf")


def device_label(gpu_id: int) -> str:
    import torch

    if gpu_id >= 0:
        return f"GPU {gpu_id}: {torch.cuda.get_device_name(gpu_id)}"
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores visible)"


def threads() -> Dict[str, Any]:
    import torch

    return {"torch.get_num_threads": torch.get_num_threads(),
            **{name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}


def thinc_ops() -> Dict[str, Any]:
    """spaCy's current ops: which matrix products thinc's layers ran with
    (``util.use_numpy_blas``: numpy's BLAS unless ``$SPACY_RHETORIC_BLIS``)."""
    from thinc.api import get_current_ops

    from spacy_rhetoric.util import BLIS_ENV

    ops = get_current_ops()
    return {"ops": type(ops).__name__, "use_blis": getattr(ops, "use_blis", None), BLIS_ENV: os.environ.get(BLIS_ENV)}


def paper_inputs(data: Path) -> List[Path]:
    inputs = [data / "paper-formats" / name for name in FORMAT_DIRS]
    missing = [str(p) for p in inputs if not p.is_dir()]
    if missing:
        raise SystemExit(f"paper folders not found: {', '.join(missing)} (--data: the shared data directory)")
    return inputs


def pipeline_description(pipeline: Path) -> Dict[str, Any]:
    """The pipeline's components and the architecture of each rhetoric_* model."""
    from spacy.util import load_config

    config = load_config(pipeline / "config.cfg", interpolate=False)
    names = list(config["nlp"]["pipeline"])
    models = {}
    for name in names:
        model = config["components"].get(name, {}).get("model")
        if name.startswith("rhetoric_") and isinstance(model, dict):
            models[name] = model.get("@architectures")
    return {"path": str(pipeline), "pipeline": names, "architectures": models}


def tfidf_labeller(csabstruct: Path):
    """TF-IDF 1-2-grams + logistic regression on the CSAbstruct train sentences."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    texts, labels = [], []
    with (csabstruct / "train.jsonl").open(encoding="utf8") as f:
        for line in f:
            record = json.loads(line)
            texts.extend(record["sentences"])
            labels.extend(record["labels"])
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
                          LogisticRegression(max_iter=1000))
    start = time.perf_counter()
    model.fit(texts, labels)
    return model, {"train_sentences": len(texts), "fit_seconds": round(time.perf_counter() - start, 2)}


def timed(run: Callable[[], Any]) -> Dict[str, Any]:
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    extra = run() or {}
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 3), "loadavg_1min_before": round(load_before, 2),
            "loadavg_1min_after": round(os.getloadavg()[0], 2), **extra}


def component_seconds(pipeline: Path, inputs: List[Path], batch_size: int, gpu_id: int, limit: int = 0) -> Dict[str, Any]:
    """Where ``annotate``'s time goes: the papers read into Docs (timed), then
    each component's ``pipe`` timed on the previous one's output, batches of
    ``batch_size`` papers (sentence splitters disabled, as ``annotate`` does;
    the GPU synchronised after each component). Two passes over freshly read
    Docs; the second is reported (the first pays first-call costs)."""
    from spacy_rhetoric.apps.annotate import expected_files, kind_of, load_pipeline, read_docs
    from spacy_rhetoric.jobs.inputs import discover_inputs
    from spacy_rhetoric.readers.common import sentence_splitters

    def sync() -> None:
        if gpu_id >= 0:
            import torch

            torch.cuda.synchronize(gpu_id)

    nlp = load_pipeline(pipeline)
    files = discover_inputs(inputs, limit=limit, kind_of=kind_of("auto"), expected=expected_files("auto"),
                            skip_hidden=True)
    skip = set(sentence_splitters(nlp))
    passes = []
    for _ in range(2):
        start = time.perf_counter()
        docs = [doc for inp in files for doc in read_docs(inp, nlp)]
        seconds = {"read": round(time.perf_counter() - start, 3)}
        for name, proc in nlp.pipeline:
            if name in skip:
                continue
            sync()
            start = time.perf_counter()
            docs = list(proc.pipe(docs, batch_size=batch_size)) if hasattr(proc, "pipe") else [proc(d) for d in docs]
            sync()
            seconds[name] = round(time.perf_counter() - start, 3)
        passes.append(seconds)
    n_sents = sum(1 for doc in docs for _ in doc.sents)
    return {"sentences": n_sents, "docs": len(docs), "seconds": passes[-1], "first_pass_seconds": passes[0],
            "total_seconds": round(sum(passes[-1].values()), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--pipeline", type=Path, default=None,
                        help="trained pipeline directory (default: .demo/pipeline of the checkout, if it exists)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="-1 = CPU; N: the pipeline and the encoder on GPU N")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    parser.add_argument("--batch-size", type=int, default=4, help="annotate's papers per nlp.pipe batch")
    parser.add_argument("--encode-batch-size", type=int, default=32)
    parser.add_argument("--limit", type=int, default=0, help="only the first N paper files (0: all)")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    parser.add_argument("--n-process", type=int, default=1, help="annotate with N worker processes")
    parser.add_argument("--encode-bf16", action="store_true",
                        help="also encode under bfloat16 autocast (side encode_bf16)")
    parser.add_argument("--components", action="store_true",
                        help="also time each component's pipe on the same papers (component_seconds)")
    args = parser.parse_args()

    pipeline = args.pipeline or ROOT / ".demo" / "pipeline"
    if not (pipeline / "config.cfg").is_file():
        print(f"no trained pipeline at {pipeline}: pass --pipeline PATH (e.g. the output/pipeline of "
              "`spacy-rhetoric demo --output OUTPUT`, or run `make demo` first)", file=sys.stderr)
        return 1
    inputs = paper_inputs(args.data)

    import torch

    import spacy_rhetoric  # noqa: F401  (extensions, factories)
    from spacy_rhetoric.apps.annotate import AnnotateSettings, annotate_corpus
    from spacy_rhetoric.ml.st_models import load_sentence_transformer
    from spacy_rhetoric.util import resolve_hf_model, use_device

    if args.threads:
        torch.set_num_threads(args.threads)
    use_device(args.gpu_id)  # before any pipeline or model loads
    device = device_label(args.gpu_id)

    encoder = load_sentence_transformer(resolve_hf_model(MODEL), max_length=256)
    labeller, tfidf_fit = tfidf_labeller(args.data / "csabstruct")
    work = Path(tempfile.mkdtemp(prefix="bench_throughput-"))
    sentences: List[str] = []
    names = SIDES + (("encode_bf16",) if args.encode_bf16 else ())
    runs: Dict[str, List[Dict[str, Any]]] = {side: [] for side in names}

    def annotate() -> Dict[str, Any]:
        out = work / f"annotate{len(runs['annotate'])}"
        start = time.perf_counter()
        summary = annotate_corpus(pipeline, inputs, out, AnnotateSettings(
            batch_size=args.batch_size, n_process=args.n_process, limit=args.limit))
        wall = time.perf_counter() - start
        if not sentences:
            with (out / "annotations.jsonl").open(encoding="utf8") as f:
                sentences.extend(json.loads(line)["text"] for line in f)
        shutil.rmtree(out, ignore_errors=True)
        timing = summary["timing"]
        return {"papers": summary["papers"], "sentences": summary["sentences"], "inputs": summary["inputs"],
                "annotate_clock_seconds": timing["seconds"], "wall_seconds": round(wall, 3),
                "sentences_per_second": round(summary["sentences"] / timing["seconds"], 2),
                "sentences_per_second_wall": round(summary["sentences"] / wall, 2)}

    def encode() -> Dict[str, Any]:
        start = time.perf_counter()
        vectors = encoder.encode(sentences, batch_size=args.encode_batch_size, convert_to_numpy=True,
                                 show_progress_bar=False)
        seconds = time.perf_counter() - start
        return {"sentences": len(vectors), "sentences_per_second": round(len(vectors) / seconds, 2)}

    def tfidf() -> Dict[str, Any]:
        start = time.perf_counter()
        labels = labeller.predict(sentences)
        seconds = time.perf_counter() - start
        return {"sentences": len(labels), "sentences_per_second": round(len(labels) / seconds, 2)}

    def encode_bf16() -> Dict[str, Any]:
        with torch.autocast("cpu" if args.gpu_id < 0 else "cuda", dtype=torch.bfloat16):
            return encode()

    sides = {"annotate": annotate, "encode": encode, "tfidf": tfidf, "encode_bf16": encode_bf16}
    try:
        # warm-up (first-call costs of the pipeline's models), outside the clock: one paper file
        annotate_corpus(pipeline, inputs, work / "warm-up", AnnotateSettings(batch_size=args.batch_size, n_process=1,
                                                                               limit=1))
        for round_no, order in enumerate((names, names[::-1])):
            for side in order:
                if side.startswith("encode") and round_no == 0:  # warm-up (first-call costs), outside the clock
                    encoder.encode(sentences[:args.encode_batch_size], batch_size=args.encode_batch_size)
                runs[side].append(timed(sides[side]))
                print(f"  {side} run {round_no + 1}: {runs[side][-1]['sentences_per_second']} sentences/s",
                      flush=True)
        breakdown = component_seconds(pipeline, inputs, args.batch_size, args.gpu_id, args.limit) if args.components else None
    finally:
        shutil.rmtree(work, ignore_errors=True)

    median = {side: round(statistics.median(r["sentences_per_second"] for r in rs), 2) for side, rs in runs.items()}
    report = {
        "benchmark": "bench_throughput", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": device, "gpu_id": args.gpu_id, "threads": threads(), "thinc_ops": thinc_ops(),
        "machine": platform.platform(),
        "python": platform.python_version(), "torch": torch.__version__, "spacy_rhetoric": spacy_rhetoric.__version__,
        "command": " ".join(sys.argv), "inputs": [str(p) for p in inputs], "n_process": args.n_process,
        "pipeline": pipeline_description(pipeline),
        "encode_model": {"name": MODEL, "path": resolve_hf_model(MODEL), "max_seq_length": 256,
                         "batch_size": args.encode_batch_size, "device": str(encoder.device)},
        "tfidf": tfidf_fit, "runs": runs,
        # scikit-learn runs on the CPU whatever --gpu-id says
        "side_devices": {"annotate": device, "encode": device, "encode_bf16": device, "tfidf": device_label(-1)},
        "median_sentences_per_second": median,
        "ratio_annotate_over_encode": round(median["annotate"] / median["encode"], 3),
        "ratio_annotate_over_tfidf": round(median["annotate"] / median["tfidf"], 4),
    }
    if breakdown:
        report["component_seconds"] = breakdown
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf8")
    print(f"\n{len(sentences)} sentences of {runs['annotate'][0]['papers']} papers; {device}; threads {threads()}; "
          f"thinc ops {thinc_ops()}")
    print(f"pipeline {pipeline}: {', '.join(report['pipeline']['pipeline'])}")
    print("| side | device | run 1 | run 2 | median sentences/s | ratio annotate / side |")
    print("| --- | --- | --- | --- | --- | --- |")
    for side, rs in runs.items():
        print(f"| {side} | {report['side_devices'][side]} | {rs[0]['sentences_per_second']} | {rs[1]['sentences_per_second']} | "
              f"{median[side]} | {round(median['annotate'] / median[side], 4)} |")
    wall = [r["sentences_per_second_wall"] for r in runs["annotate"]]
    print(f"annotate, whole call (pipeline load and merge included): {wall[0]} / {wall[1]} sentences/s")
    print(f"ratio annotate / encode: {report['ratio_annotate_over_encode']}")
    if breakdown:
        print(f"component-wise pass ({breakdown['sentences']} sentences, seconds): "
              + ", ".join(f"{name} {sec}" for name, sec in breakdown["seconds"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
