"""``nlp.pipe(n_process=2)`` with torch models in the pipeline: forked
workers must not wait on the parent's OpenMP thread pool."""
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    import spacy
    import torch
    from spacy.language import Language

    import spacy_rhetoric  # noqa: F401 - the fork hook is installed on import

    torch.set_num_threads(2)
    weights = torch.randn(384, 384)
    for _ in range(3):  # the parent's thread pool is started, as a loaded pipeline's first doc does
        (weights @ weights).sum()

    @Language.component("torch_sum")
    def torch_sum(doc):
        doc.user_data["sum"] = float((weights @ weights).sum())
        return doc

    nlp = spacy.blank("en")
    nlp.add_pipe("torch_sum")
    docs = list(nlp.pipe(["One text.", "Two texts.", "Three.", "Four."], n_process=2, batch_size=1))
    assert [d.text for d in docs] == ["One text.", "Two texts.", "Three.", "Four."]
    assert all(isinstance(d.user_data["sum"], float) for d in docs)
    print("PIPE-OK")
''')


def test_n_process_with_torch_does_not_hang(tmp_path):
    script = tmp_path / "pipe.py"
    script.write_text(SCRIPT, encoding="utf8")
    try:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as err:  # pragma: no cover - the failure this test guards against
        raise AssertionError("nlp.pipe(n_process=2) hung with torch in the workers") from err
    assert out.returncode == 0, out.stderr[-2000:]
    assert "PIPE-OK" in out.stdout


def test_fork_hook_sets_one_thread_in_the_child():
    """torch and numpy's BLAS each on one thread in a forked worker."""
    import os

    import numpy  # noqa: F401 - its BLAS is loaded before the fork
    import torch
    from threadpoolctl import threadpool_info

    import spacy_rhetoric  # noqa: F401

    blas_here = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
        os.write(write, f"{torch.get_num_threads()} {blas}".encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    torch_threads, blas = os.read(read, 64).decode().split(" ", 1)
    assert torch_threads == "1"
    assert blas == str([1] * len(blas_here)) and blas_here  # numpy's OpenBLAS: one thread in the child


def _slow_for_small(i: int):
    """Work whose first items take longest: without work stealing the
    results still come back in input order."""
    import os
    import time

    time.sleep(0.3 if i < 2 else 0.01)
    return i * i, os.getpid()


def test_pool_inputs_finishes_in_input_order_on_every_worker():
    from spacy_rhetoric.jobs.local import pool_inputs

    got = []
    pool_inputs(list(range(12)), work=_slow_for_small, finish=lambda i, r: got.append((i, r)), n_process=2)
    assert [i for i, _ in got] == list(range(12))
    assert all(r[0] == i * i for i, r in got)
    assert len({pid for _, (_, pid) in got}) == 2  # both workers took inputs
    import os

    assert all(pid != os.getpid() for _, (_, pid) in got)


def _fail_on_three(i: int):
    if i == 3:
        raise ValueError(f"input {i} is bad")
    return i


def test_pool_inputs_raises_a_workers_error_here():
    from spacy_rhetoric.jobs.local import pool_inputs

    done = []
    with pytest.raises(ValueError, match="input 3 is bad"):
        pool_inputs(list(range(8)), work=_fail_on_three, finish=lambda i, r: done.append(i), n_process=2)
    assert done == [0, 1, 2]


def _die_on_two(i: int):
    import os
    import signal

    if i == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer would
    return i


def test_pool_inputs_ends_when_a_worker_dies_instead_of_waiting():
    """A killed worker ends the run with BrokenProcessPool (a Pool would wait
    for its result for ever); no worker outlives the call."""
    import multiprocessing
    import threading
    import time
    from concurrent.futures.process import BrokenProcessPool

    from spacy_rhetoric.jobs.local import pool_inputs

    outcome = []
    before = set(multiprocessing.active_children())

    def run():
        try:
            pool_inputs(list(range(6)), work=_die_on_two, finish=lambda i, r: None, n_process=2)
            outcome.append("returned")
        except BrokenProcessPool:
            outcome.append("broken")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert outcome == ["broken"], "pool_inputs hung or ignored a dead worker"
    # the call has joined its workers (terminated, else killed); active_children() reaps what has exited
    deadline = time.monotonic() + 5
    while set(multiprocessing.active_children()) - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not set(multiprocessing.active_children()) - before


def test_annotate_uses_the_pool_for_paper_files_only(monkeypatch):
    """Paper files go one a task to forked workers; the Docs of a .spacy
    input are spread over one nlp.pipe stream; one process, one input or one
    CPU: no pool."""
    from pathlib import Path

    from spacy_rhetoric.apps import annotate
    from spacy_rhetoric.apps.annotate import AnnotateSettings, use_pool
    from spacy_rhetoric.jobs import local
    from spacy_rhetoric.jobs.inputs import InputFile

    papers = [InputFile(f"p{i}.xml", Path(f"p{i}.xml"), "auto") for i in range(3)]
    two = AnnotateSettings(n_process=2)
    monkeypatch.setattr(local, "usable_cpus", lambda: 2)
    assert use_pool(two, papers)
    assert not use_pool(AnnotateSettings(n_process=1), papers)
    assert not use_pool(two, papers[:1])
    assert not use_pool(two, papers + [InputFile("c.spacy", Path("c.spacy"), "spacy")])
    monkeypatch.setattr(annotate, "can_fork", lambda: False)
    assert not use_pool(two, papers)
    monkeypatch.setattr(annotate, "can_fork", lambda: True)
    monkeypatch.setattr(local, "usable_cpus", lambda: 1)
    assert not use_pool(two, papers)
