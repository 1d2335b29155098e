"""``spacy train`` runs that are kept and reused: a config trained into an
output directory (``model-last``) with ``spacy.cli.train.train`` in this
process (:func:`train_pipeline`) or ``python -m spacy train`` in a child
process at a lower priority (:class:`BackgroundTraining`). A run writes a
stamp of what its model depends on (:func:`training_stamp`: the config text,
the overrides, the input files by size and mtime, the section names) when it
ends; a later run with the same stamp reuses the model. Also the overrides of
a run with a fixed step budget (:func:`training_overrides`), one evaluation
on the whole dev set at the end (:func:`end_evaluation_overrides`,
:func:`evaluate_on_dev`) and the scores a model was saved with
(:func:`dev_scores`). The demo (``apps/demo.py``) trains its models with
them."""
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import spacy

from ..errors import RhetoricError
from ..section_headings import SENTENCE_SECTIONS

STAMP_FILE = "demo_stamp.json"


class TrainingFailed(RhetoricError):
    """A training in a child process that ended with an error; the message names its log."""


def training_stamp(config: Path, overrides: Dict[str, Any], inputs: List[Path]) -> str:
    """What a trained model depends on: the config text, the overrides, the
    size and mtime of the input files and the section names its section
    features are made of (``SENTENCE_SECTIONS``: a model trained before a
    section name was added cannot load with the new width)."""
    return json.dumps({
        "config_sha1": hashlib.sha1(config.read_bytes()).hexdigest(),
        "sections": list(SENTENCE_SECTIONS),
        "overrides": {k: str(v) for k, v in overrides.items()},
        "inputs": {str(p): [p.stat().st_size, p.stat().st_mtime_ns] for p in inputs},
    }, sort_keys=True)


def reused_model(config: Path, output: Path, overrides: Dict[str, Any], inputs: Sequence[Path],
                 retrain: bool) -> Tuple[Optional[Path], str]:
    """The model in ``output`` if it was trained from the same config,
    overrides and ``inputs`` (files, by size and mtime), else None; and the
    stamp a new training writes when it ends."""
    model = output / "model-last"
    stamp = output / STAMP_FILE
    wanted = training_stamp(config, overrides, list(inputs))
    if not retrain and (model / "meta.json").exists() and stamp.exists() and stamp.read_text() == wanted:
        print(f"  reusing {model} (delete {output} or pass --retrain to train again)")
        return model, wanted
    stamp.unlink(missing_ok=True)  # an interrupted run is never reused
    return None, wanted


def record_trained(config: Path, output: Path, wanted: str, start: float, how: str = "in") -> Path:
    """Write the stamp ``wanted`` beside the model a run of ``config`` just
    saved in ``output`` (from then on it is reused) and return the model."""
    (output / STAMP_FILE).write_text(wanted)
    model = output / "model-last"
    print(f"  trained {config} {how} {time.perf_counter() - start:.0f} s -> {model}")
    return model


def train_pipeline(config: Path, output: Path, overrides: Dict[str, Any], *, inputs: Sequence[Path] = (),
                   retrain: bool = False, gpu_id: int = -1, evaluate_at_end: bool = False) -> Path:
    """Train ``config`` with ``spacy.cli.train.train`` into ``output`` and
    return the final model (``model-last``, whose meta.json holds the dev
    scores of its last evaluation, which is the final step). A model already
    in ``output`` trained from the same config, overrides and ``inputs``
    (files, by size and mtime) is reused. ``gpu_id``: spacy train's
    ``--gpu-id`` (-1 = CPU). ``evaluate_at_end``: then :func:`evaluate_on_dev`
    of the saved model (with ``end_evaluation_overrides`` in ``overrides``,
    the dev set is read once, at the end, where spaCy's loop would read it
    twice)."""
    from spacy.cli.train import train

    model, wanted = reused_model(config, output, overrides, inputs, retrain)
    if model is not None:
        return model
    start = time.perf_counter()
    train(config, output, use_gpu=gpu_id, overrides=overrides)
    if evaluate_at_end:
        evaluate_on_dev(output / "model-last")
    return record_trained(config, output, wanted, start)


def end_evaluation_overrides(steps: int) -> Dict[str, Any]:
    """For ``train_pipeline(evaluate_at_end=True)``: spaCy's loop evaluates
    after its first step and then every ``eval_frequency`` steps; past the
    last step, and on one dev document, that first evaluation is all it runs
    (a few seconds instead of a pass over the whole dev set for scores nobody
    reads)."""
    return {"training.eval_frequency": int(steps) + 1, "corpora.dev.limit": 1}


def evaluate_on_dev(model: Path) -> Dict[str, Any]:
    """Score the trained pipeline ``model`` on its whole dev corpus (its
    config's ``corpora.dev`` without the ``limit``) and put the scores in its
    meta.json ``performance`` as spaCy's loop writes them (the
    ``training.score_weights`` metrics, beside the losses of its last step);
    returns that ``performance``."""
    from spacy import util

    from ..io import atomic_write_json

    nlp = spacy.load(model)
    resolved = nlp.config.interpolate()
    section, key = resolved["training"]["dev_corpus"].split(".", 1)
    reader = util.registry.resolve({"dev": {**resolved[section][key], "limit": 0}})["dev"]
    started = time.perf_counter()
    scores = nlp.evaluate(reader(nlp))
    meta_path = Path(model) / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf8"))
    performance = {k: v for k, v in meta.get("performance", {}).items() if k.endswith("_loss")}
    weights = resolved["training"]["score_weights"]
    performance.update({metric: scores.get(metric, 0.0) for metric in weights if metric is not None})
    meta["performance"] = performance
    atomic_write_json(meta_path, meta)
    print(f"  evaluated on the whole dev set in {time.perf_counter() - started:.0f} s: "
          + ", ".join(f"{k} {v:.3f}" for k, v in performance.items()
                      if isinstance(v, float) and not k.endswith("_loss") and weights.get(k)))
    return performance


class BackgroundTraining:
    """``python -m spacy train`` of ``config`` in a child process, at a lower
    CPU priority (niceness 10 where the OS has it) and on one thread, its
    output in ``log``: a second training that takes the core the first one
    leaves idle. spaCy trains a thinc pipeline on one core, so the encoder
    trains beside the classifier's ``spacy train`` steps; while the
    classifier's fine-tuned member (``ml/finetuned.py``) keeps both cores
    busy, the lower priority leaves them to it. :meth:`wait` returns the
    model as :func:`train_pipeline` does (reused or trained), or raises
    :class:`TrainingFailed` with the end of the log. ``gpu_id``: spacy train's
    ``--gpu-id`` (-1 = CPU)."""

    def __init__(self, config: Path, output: Path, overrides: Dict[str, Any], *, inputs: Sequence[Path] = (),
                 retrain: bool = False, log: Path, gpu_id: int = -1):
        import subprocess
        import sys

        self.config, self.output, self.log = config, output, log
        self.model, self.wanted = reused_model(config, output, overrides, inputs, retrain)
        self.process: Any = None
        self.start = time.perf_counter()
        if self.model is not None:
            return
        command = [sys.executable, "-m", "spacy", "train", str(config), "--output", str(output),
                   "--gpu-id", str(gpu_id)]
        for key, value in overrides.items():
            command += [f"--{key}", str(value)]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        if hasattr(os, "setpriority"):  # POSIX; no preexec_fn (not safe once threads run)
            try:
                os.setpriority(os.PRIO_PROCESS, self.process.pid, 10)
            except OSError:
                pass
        print(f"  training {config} in the background (log: {log})")

    def wait(self) -> Path:
        if self.process is None:
            return self.model
        code = self.process.wait()
        self.process = None
        if code != 0:
            tail = self.log.read_text(encoding="utf8", errors="replace").splitlines()[-15:]
            raise TrainingFailed(f"training {self.config} failed (exit code {code}); the end of {self.log}:\n"
                            + "\n".join(tail))
        self.model = record_trained(self.config, self.output, self.wanted, self.start, how="in the background, within")
        return self.model

    def stop(self) -> None:
        """End the child if it still runs (the demo failed or was interrupted)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()


def dev_scores(model: Path) -> Dict[str, Any]:
    """The dev scores spaCy's training measured for ``model`` (meta.json
    ``performance``)."""
    meta = json.loads((Path(model) / "meta.json").read_text(encoding="utf8"))
    return meta.get("performance", {})


def training_overrides(train: Path, dev: Path, steps: int) -> Dict[str, Any]:
    """Paths, a fixed step budget and a single evaluation at the last step."""
    return {
        "paths.train": str(train),
        "paths.dev": str(dev),
        "training.max_steps": int(steps),
        "training.eval_frequency": int(steps),
        "training.patience": 0,
        "training.max_epochs": 0,
    }
