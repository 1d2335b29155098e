"""``--gpu-id`` of the commands that run a pipeline (annotate, index, label,
render, demo) without a GPU: ``spacy.require_gpu`` and torch's device count are
replaced, so the setting is followed from the option to where it acts:
``require_gpu(N)`` before the pipeline loads, one process for ``nlp.pipe``
(and one LocalCluster worker, loading on the GPU), spacy train's ``use_gpu``
in the demo. The one-line error when no CUDA device exists is checked with
the other commands' in test_devices.py."""
import json
import os

import pytest
import torch
from helpers import cli_text, save_tiny_pipeline
from spacy.language import Language
from thinc.api import NumpyOps, get_current_ops, set_current_ops
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
from spacy_rhetoric.apps import demo, training_runs
from spacy_rhetoric.cli import app, load_commands
from spacy_rhetoric.jobs import bounded_processes
from spacy_rhetoric.jobs.cluster import load_on_gpu, on_device
from spacy_rhetoric.util import pipeline_gpu


class GpuLikeOps(NumpyOps):
    """numpy arrays, but reports a GPU device as cupy's ops do."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.device_type = "gpu"
        self.device_id = 0


@pytest.fixture
def fake_gpu(monkeypatch):
    """torch sees one CUDA device; ``spacy.require_gpu(N)`` records N and
    sets GPU-like ops (as thinc's does with cupy's). spaCy's ops are the CPU's
    again afterwards."""
    import spacy

    calls = []

    def require_gpu(gpu_id=0):
        calls.append(gpu_id)
        set_current_ops(GpuLikeOps())
        return True

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(spacy, "require_gpu", require_gpu)
    set_current_ops(NumpyOps())
    yield calls
    set_current_ops(NumpyOps())


def test_pipeline_gpu_follows_spacy_ops(fake_gpu):
    import spacy

    assert pipeline_gpu() == -1
    spacy.require_gpu(0)
    assert pipeline_gpu() == 0


def test_one_process_and_one_local_worker_on_a_gpu(fake_gpu, capsys):
    import spacy

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert bounded_processes(4, 10) == min(4, cpus)  # the CPU: bounded by the cores only
    capsys.readouterr()
    spacy.require_gpu(0)
    assert bounded_processes(4, 10) == 1
    assert "--n-process 4: the pipeline runs on GPU 0, in one process: using 1" in " ".join(capsys.readouterr().out.split())
    def load(name):
        return f"pipeline {name}"

    (gpu_load, args), workers = on_device((load, ("en",)), "local", 3)
    assert (gpu_load, args, workers) == (load_on_gpu, (0, load, "en"), 1)
    assert "--workers 3" in capsys.readouterr().out
    assert on_device((load, ("en",)), "tcp://host:8786", 3)[1] == 3  # a remote cluster's size is its own
    fake_gpu.clear()
    assert load_on_gpu(*args) == "pipeline en" and fake_gpu == [0]  # a worker: require_gpu, then load


def test_annotate_gpu_id_loads_on_the_gpu_in_one_process(fake_gpu, monkeypatch, tmp_path):
    """--gpu-id 0 --n-process 2: require_gpu(0) before the pipeline loads (its
    models get the GPU's ops) and nlp.pipe runs in one process."""
    load_commands()
    model = save_tiny_pipeline(tmp_path / "pipeline")
    papers = tmp_path / "papers"
    papers.mkdir()
    for name in ("a", "b"):
        (papers / f"{name}.txt").write_text(f"# Paper {name}\n\n## Introduction\n\nParsing is important. "
                                            "We aim to parse.\n", encoding="utf8")
    seen = []
    original = Language.pipe

    def pipe(self, texts, **kwargs):
        seen.append((kwargs.get("n_process", 1), self.get_pipe("rhetoric_function_classifier").model.ops.device_type))
        return original(self, texts, **kwargs)

    monkeypatch.setattr(Language, "pipe", pipe)
    result = CliRunner().invoke(app, ["annotate", str(model), str(papers), "-o", str(tmp_path / "out"),
                                      "--n-process", "2", "--gpu-id", "0"])
    assert result.exit_code == 0, result.output
    assert fake_gpu == [0]
    assert (1, "gpu") in seen and all(n == 1 for n, _ in seen), seen
    assert "--n-process 2: the pipeline runs on GPU 0, in one process: using 1" in cli_text(result)


@pytest.mark.parametrize("command", ["index", "label", "render"])
def test_gpu_id_reaches_require_gpu(command, fake_gpu, tmp_path):
    """Each command asks spaCy for GPU N before anything else (here the work
    then fails on an empty input, after the device was set)."""
    load_commands()
    inputs = tmp_path / "in"
    inputs.mkdir()
    args = {"index": ["index", str(tmp_path / "pipeline"), str(inputs), "-o", str(tmp_path / "out")],
            "label": ["label", str(inputs), "-o", str(tmp_path / "out")],
            "render": ["render", str(inputs / "paper.spacy"), "-o", str(tmp_path / "out.html")]}[command]
    result = CliRunner().invoke(app, args + ["--gpu-id", "0"])
    assert fake_gpu == [0], result.output
    assert get_current_ops().device_type == "gpu"


def _tiny_demo_data(root):
    (root / demo.CSABSTRUCT_DIR).mkdir(parents=True)
    for split, n in (("train", 4), ("dev", 2)):
        with (root / demo.CSABSTRUCT_DIR / f"{split}.jsonl").open("w", encoding="utf8") as f:
            for _ in range(n):
                f.write(json.dumps({"abstract_id": 0, "labels": ["background", "method", "result"],
                                    "sentences": ["Parsing is hard.", "We train a parser.", "It works."],
                                    "confs": [1.0, 1.0, 1.0]}) + "\n")
    (root / demo.PHRASES_DIR).mkdir()
    return demo.find_data(root)


def test_demo_trains_on_the_gpu_it_is_given(monkeypatch, tmp_path):
    """demo's gpu_id reaches spacy train's use_gpu (in this process) and the
    background training's --gpu-id."""
    import subprocess

    import spacy.cli.train

    trained, commands = [], []

    def save_model(output):
        (output / "model-last").mkdir(parents=True, exist_ok=True)
        (output / "model-last" / "meta.json").write_text("{}", encoding="utf8")

    def train(config, output, *, use_gpu=-1, overrides=None):
        trained.append((config.stem, use_gpu))
        save_model(output)

    class Popen:
        def __init__(self, command, **kwargs):
            commands.append(command)
            save_model(demo.Path(command[command.index("--output") + 1]))
            self.pid = -1

        def wait(self):
            return 0

        def poll(self):
            return 0

    evaluated = []
    monkeypatch.setattr(spacy.cli.train, "train", train)
    monkeypatch.setattr(subprocess, "Popen", Popen)
    monkeypatch.setattr(demo.os, "setpriority", lambda *args: None, raising=False)
    # the classifier's one evaluation on the dev set, after its training (on the ops that training set up)
    monkeypatch.setattr(training_runs, "evaluate_on_dev", lambda model: evaluated.append(model.parent.name))
    data = _tiny_demo_data(tmp_path / "data")
    demo.train_demo_models(data, tmp_path / "bg", classifier_steps=1, encoder_steps=1, background=True, gpu_id=0)
    assert trained == [("classifier", 0)] and evaluated == ["classifier"]
    assert commands[0][commands[0].index("--gpu-id") + 1] == "0"
    demo.train_demo_models(data, tmp_path / "fg", classifier_steps=1, encoder_steps=1, background=False, gpu_id=0)
    assert trained[1:] == [("classifier", 0), ("encoder", 0)]
    demo.train_demo_models(data, tmp_path / "cpu", classifier_steps=1, encoder_steps=1, background=False)
    assert trained[3:] == [("classifier", -1), ("encoder", -1)]
