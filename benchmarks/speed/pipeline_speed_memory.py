"""The memory rows of ``bench_pipeline_speed.py``.

Memory: each document size runs in a fresh child process (peak RSS from
``resource.getrusage`` is per process), which loads the same pipeline from a
temporary directory and processes one document of N characters built from
CSAbstruct train abstracts (paragraphs separated by a blank line).
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import spacy
from pipeline_speed_common import DATA, load_abstracts, set_threads, timed
from wasabi import msg


def rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:  # pragma: no cover
        return float("nan")


def peak_rss_mb() -> float:
    # Linux: ru_maxrss in KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


def memory_rows(script: str, nlp, sizes: str, threads: int, clean_trf_data: bool, long_text_pieces: int,
                child_timeout: int, report: Dict, out: Path) -> List[Dict]:
    """``nlp`` saved to a temporary directory, then one fresh process
    (``script --memory-child``) per size of ``sizes`` (characters, comma
    separated); ``report`` with the rows so far is written to ``out`` after
    each. Stops at the first child that times out or fails."""
    mem = []
    with tempfile.TemporaryDirectory() as tmp:
        nlp.to_disk(tmp)
        for size in [int(s) for s in sizes.split(",") if s.strip()]:
            cmd = [sys.executable, script, "--memory-child",
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
    return mem
