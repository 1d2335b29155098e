"""Where a training step of a CRF config spends its time on the CPU (should the CRF move to the GPU?).

Builds a config (default ``benchmarks/common/configs/classifier_seq_cpu.cfg``; a name
is looked up in benchmarks/common/configs/, then among the shipped configs), initializes it on
the first ``--init-docs`` CSAbstruct train abstracts and runs ``--steps``
``nlp.update`` steps on batches of ``--batch-size`` abstracts under cProfile.
Reports per step: the whole update, the CRF's host-side torch work
(``crf_log_marginals`` forward and torch's ``backward``, which only the CRF
uses in the CPU configs), and the n-gram branch that runs on the CPU
whatever the device (``with_cpu_forward``: n-gram hashing + SparseLinear).
On a GPU everything else shrinks; these parts stay on the host.

    OMP_NUM_THREADS=1 python benchmarks/speed/bench_crf_share.py --steps 40 \\
        --out benchmarks/speed/results/crf_share.json
"""
import cProfile
import json
import platform
import pstats
import time
from pathlib import Path

import spacy
import typer
from spacy.training import Example
from spacy.util import fix_random_seed

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.readers.csabstruct import read_csabstruct
from spacy_rhetoric.resources import config_path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK_CONFIGS = ROOT / "benchmarks" / "common" / "configs"
TRAIN = ROOT.parent / "shared" / "data" / "csabstruct" / "train.jsonl"


def _cumtime(stats: pstats.Stats, filename_end: str, function: str) -> float:
    total = 0.0
    for (filename, _, name), (_, _, _, cumtime, _) in stats.stats.items():
        if filename.endswith(filename_end) and name == function:
            total += cumtime
    return total


def main(config: str = typer.Option("classifier_seq_cpu"), steps: int = typer.Option(40),
         batch_size: int = typer.Option(16), init_docs: int = typer.Option(200),
         out: Path = typer.Option(None)) -> None:
    fix_random_seed(0)
    path = BENCHMARK_CONFIGS / f"{config}.cfg"
    cfg = spacy.util.load_config(path if path.is_file() else config_path(config), interpolate=True)
    nlp = spacy.util.load_model_from_config(cfg, auto_fill=True, validate=True)
    docs = list(read_csabstruct(TRAIN, nlp.vocab, limit=max(init_docs, steps * batch_size)))
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    optimizer = nlp.initialize(lambda: examples[:init_docs])
    batches = [examples[i * batch_size:(i + 1) * batch_size] for i in range(steps)]
    nlp.update(batches[0], sgd=optimizer)  # warm-up, not counted
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    for batch in batches:
        nlp.update(batch, sgd=optimizer, losses={})
    profile.disable()
    wall = time.perf_counter() - start
    stats = pstats.Stats(profile)
    update = _cumtime(stats, "spacy/language.py", "update")
    crf_forward = _cumtime(stats, "spacy_rhetoric/ml/sequence.py", "crf_log_marginals")
    # torch's backward: only the CRF uses torch autograd in the CPU configs (the CNN trunk is thinc)
    crf_backward = _cumtime(stats, "torch/_tensor.py", "backward")
    ngrams = _cumtime(stats, "spacy_rhetoric/ml/devices.py", "with_cpu_forward")
    report = {
        "config": config, "steps": steps, "batch_size": batch_size, "machine": platform.node(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "sentences_per_step": sum(len(list(eg.reference.sents)) for b in batches for eg in b) / steps,
        "per_step_s": {"update (profiled)": update / steps, "crf_log_marginals (forward)": crf_forward / steps,
                       "CRF torch backward": crf_backward / steps,
                       "n-gram branch forward (with_cpu)": ngrams / steps},
        "wall_s_profiled": wall,
    }
    print(json.dumps(report, indent=2))
    if out:
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf8")


if __name__ == "__main__":
    typer.run(main)
