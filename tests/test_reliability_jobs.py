"""Reliability of the corpus jobs (``spacy_rhetoric.jobs``: the walk of the
inputs, shards, the Dask runner, interrupts): no input can block or stop a
run, per-input work stays constant as a run grows, ``--workers`` is bounded,
the dashboard is local, and an interrupted run says how to resume."""
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import cli_text, save_tiny_pipeline
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
import spacy_rhetoric.cli.annotate  # noqa: F401  registers the commands
import spacy_rhetoric.cli.render  # noqa: F401
from spacy_rhetoric.apps.annotate import annotate_corpus
from spacy_rhetoric.cli import app

TEXT = "We propose a method for parsing. It works well. Results are good.\n"


def terminal_signals():
    """``preexec_fn`` of a child that stands for a command typed in a terminal:
    SIGINT as a terminal leaves it (Python's KeyboardInterrupt), even when
    the tests themselves run as a background job, which starts with SIGINT
    ignored (and every child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def blank_dir(tmp_path_factory):
    """A blank pipeline (sentencizer only): what annotate runs fastest."""
    return save_tiny_pipeline(tmp_path_factory.mktemp("jobs_model") / "pipeline", pipes=())


class Hung(Exception):
    pass


@contextmanager
def deadline(seconds: int):
    """Fail instead of hanging: an alarm raises inside a blocking call."""
    def on_alarm(signum, frame):
        raise Hung(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    if isinstance(result.exception, Hung):
        raise result.exception
    return result.exit_code, cli_text(result)


def make_socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


def make_device(path: Path) -> bool:
    """A character device like /dev/null where permitted (root)."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return True
    except OSError:
        return False


# -- FIFOs, devices and sockets: skipped and counted, never opened --------------------------------

def test_special_files_among_inputs_are_skipped_and_counted(blank_dir, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "good.txt").write_text(TEXT, encoding="utf8")
    os.mkfifo(src / "pipe.txt")
    sock = make_socket(src / "sock.txt")
    n_special = 2 + make_device(src / "null.txt")
    try:
        with deadline(60):
            summary = annotate_corpus(blank_dir, [src], tmp_path / "out")
    finally:
        sock.close()
    assert summary["inputs_annotated"] == 1 and summary["inputs_skipped"] == n_special
    assert summary["inputs"] == 1 + n_special
    reasons = {s["input"]: s["reason"] for s in summary["skipped"]}
    assert "FIFO" in reasons["pipe.txt"] and "socket" in reasons["sock.txt"]
    assert n_special == 2 or "device" in reasons["null.txt"]
    records = (tmp_path / "out" / "annotations.jsonl").read_text(encoding="utf8").splitlines()
    assert {json.loads(r)["input"] for r in records} == {"good.txt"}


@pytest.mark.parametrize("command", ["render", "annotate"])
def test_a_fifo_named_as_input_is_one_line(blank_dir, tmp_path, command):
    os.mkfifo(tmp_path / "paper.txt")
    argv = (["render", tmp_path / "paper.txt", "-m", blank_dir, "-o", tmp_path / "p.html"] if command == "render"
            else ["annotate", blank_dir, tmp_path / "paper.txt", "-o", tmp_path / "out"])
    with deadline(60):
        code, text = run_cli(*argv)
    assert code == 1 and "FIFO" in text and "Traceback" not in text, text


# -- symlinks: followed at most once per real directory -------------------------------------------

def test_symlink_loops_are_followed_once(blank_dir, tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text(TEXT, encoding="utf8")
    (src / "sub" / "b.txt").write_text(TEXT, encoding="utf8")
    (src / "sub" / "uplink").symlink_to("..", target_is_directory=True)  # back to in/
    (src / "sub" / "here").symlink_to("../sub", target_is_directory=True)  # sub itself: a second loop
    (src / "self.txt").symlink_to("self.txt")  # a link to itself: ELOOP when opened
    outside = tmp_path / "shared"
    outside.mkdir()
    (outside / "c.txt").write_text(TEXT, encoding="utf8")
    (src / "x").symlink_to(outside, target_is_directory=True)
    (src / "y").symlink_to(outside, target_is_directory=True)  # the same real folder again
    with deadline(60):
        summary = annotate_corpus(blank_dir, [src], tmp_path / "out")
    assert summary["inputs_annotated"] == 3, summary["skipped"]
    records = [json.loads(r) for r in (tmp_path / "out" / "annotations.jsonl").read_text().splitlines()]
    assert sorted({r["input"] for r in records}) == ["a.txt", "sub/b.txt", "x/c.txt"]
    assert [s["input"] for s in summary["skipped"]] == ["self.txt"]


# -- an unreadable file: skipped and counted like a bad-format one --------------------------------

@contextmanager
def unreadable(monkeypatch, path: Path):
    """Opening ``path`` raises EACCES (tests run as root, where chmod 000
    does not stop a read)."""
    import builtins
    import errno
    import io

    target = os.path.realpath(path)

    def denied(name):
        if isinstance(name, (str, bytes, os.PathLike)) and os.path.realpath(os.fsdecode(name)) == target:
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(name))

    real_open, real_os_open = builtins.open, os.open

    def fake_open(file, *args, **kwargs):
        denied(file)
        return real_open(file, *args, **kwargs)

    def fake_os_open(file, *args, **kwargs):
        denied(file)
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    yield


def test_an_unreadable_file_is_skipped_and_counted(blank_dir, tmp_path, monkeypatch):
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (src / name).write_text(TEXT, encoding="utf8")
    with unreadable(monkeypatch, src / "b.txt"):
        summary = annotate_corpus(blank_dir, [src], tmp_path / "out")
    assert summary["inputs"] == 3 and summary["inputs_annotated"] == 2 and summary["inputs_skipped"] == 1
    assert summary["skipped"][0]["input"] == "b.txt" and "Permission denied" in summary["skipped"][0]["reason"]


def test_label_skips_an_unreadable_file(tmp_path, monkeypatch):
    from spacy_rhetoric.corpus_builder import BuildSettings, build_corpus

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("In this paper we propose a new method for parsing.\n", encoding="utf8")
    (src / "b.txt").write_text("Table 2 shows the results of the tagging study.\n", encoding="utf8")
    os.mkfifo(src / "c.txt")
    with unreadable(monkeypatch, src / "b.txt"), deadline(120):
        summary = build_corpus([src], tmp_path / "out", [("Showing the aim of the paper",
                                                          "in this paper we propose a new method")], BuildSettings(n=3))
    assert summary["inputs"] == 3 and summary["inputs_labeled"] == 1 and summary["inputs_skipped"] == 2
    assert {s["input"] for s in summary["skipped"]} == {"b.txt", "c.txt"}


# -- per-input work constant as a run grows --------------------------------------------------------

def test_writing_a_shard_never_lists_the_shard_folder(blank_dir, tmp_path, monkeypatch):
    """The shard folder is listed a fixed number of times per run, not once
    per input (a glob per input costs milliseconds once thousands of shards
    exist)."""
    src = tmp_path / "in"
    src.mkdir()
    n = 40
    for i in range(n):
        (src / f"p{i:03d}.txt").write_text(TEXT, encoding="utf8")
    shard_dir = os.path.realpath(tmp_path / "out" / "shards")
    listings = []
    real_scandir, real_listdir = os.scandir, os.listdir

    def note(path):
        if path is not None and not isinstance(path, int) and os.path.realpath(os.fsdecode(path)) == shard_dir:
            listings.append(path)

    def scandir(path="."):
        note(path)
        return real_scandir(path)

    def listdir(path="."):
        note(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)
    summary = annotate_corpus(blank_dir, [src], tmp_path / "out")
    assert summary["inputs_annotated"] == n
    assert len(listings) <= 3, f"the shard folder was listed {len(listings)} times for {n} inputs"


# -- the Dask LocalCluster: bounded, local ---------------------------------------------------------

class FakeCluster:
    made = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        FakeCluster.made.append(self)

    def close(self):
        pass


class FakeClient:
    def __init__(self, cluster):
        self.cluster = cluster


def test_local_cluster_workers_bounded_by_cpus_and_dashboard_local(monkeypatch, capsys):
    from spacy_rhetoric.jobs import cluster

    monkeypatch.setattr(cluster, "import_distributed", lambda: (FakeClient, FakeCluster, None))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    FakeCluster.made.clear()
    cluster.dask_client("local", 8)
    kwargs = FakeCluster.made[-1].kwargs
    assert kwargs["n_workers"] == 2
    assert "--workers 8" in capsys.readouterr().out
    dashboard = kwargs.get("dashboard_address")
    assert dashboard is None or str(dashboard).startswith("127.0.0.1:"), dashboard
    assert kwargs.get("host") in (None, "127.0.0.1", "localhost")
    cluster.dask_client("local", 1)  # within the bound: no warning
    assert FakeCluster.made[-1].kwargs["n_workers"] == 1 and "--workers" not in capsys.readouterr().out
    cluster.dask_client("local", 2, 1)  # and by the inputs, when known
    assert FakeCluster.made[-1].kwargs["n_workers"] == 1 and "1 inputs" in capsys.readouterr().out


@pytest.mark.slow
def test_a_real_local_cluster_serves_nothing_beyond_this_machine():
    """Every socket a LocalCluster listens on is bound to 127.0.0.1."""
    psutil = pytest.importorskip("psutil")
    from spacy_rhetoric.jobs import cluster

    client, local = cluster.dask_client("local", 1)
    try:
        pids = {os.getpid(), *(p.pid for p in psutil.Process().children(recursive=True))}
        listening = [c.laddr for c in psutil.net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN and c.pid in pids]
    finally:
        client.close()
        local.close()
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening


# -- SIGINT / SIGTERM: one line saying what is kept and how to resume; the lock released ----------

INTERRUPT = """
import os, signal, sys
import spacy_rhetoric.apps.annotate as annotate
import spacy_rhetoric.cli.annotate  # registers the command
from spacy_rhetoric.cli import app

write = annotate.write_shard
def write_then_signal(*args, **kwargs):
    path = write(*args, **kwargs)
    if len(os.listdir(os.path.dirname(path))) >= 2:
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    return path
annotate.write_shard = write_then_signal
app(sys.argv[2:], prog_name="spacy-rhetoric")
"""


@pytest.mark.parametrize("signame,code", [("SIGTERM", 143), pytest.param("SIGINT", 130, marks=pytest.mark.slow)])
def test_an_interrupted_annotate_says_how_to_resume(blank_dir, tmp_path, signame, code):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(6):
        (src / f"p{i}.txt").write_text(TEXT, encoding="utf8")
    out = tmp_path / "out"
    argv = [sys.executable, "-c", textwrap.dedent(INTERRUPT), signame,
            "annotate", str(blank_dir), str(src), "-o", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, preexec_fn=terminal_signals,
                          env=dict(os.environ, COLUMNS="300", TERM="dumb"))
    text = proc.stdout + proc.stderr
    assert proc.returncode == code, text
    assert "Traceback" not in text, text
    folded = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout).split())  # wasabi wraps long lines
    said = re.findall(r"Interrupted \((\w+)\): (\d+) finished inputs? in (\S+) kept; "
                      r"run the same command again to resume", folded)
    assert len(said) == 1 and said[0][0] == signame and said[0][2] == str(out / "shards"), text
    assert not (out / ".lock").exists()
    summary = annotate_corpus(blank_dir, [src], out)
    assert summary["inputs_resumed"] >= 1 and summary["inputs_annotated"] == 6


def test_index_skips_an_unreadable_file(tmp_path, monkeypatch):
    from spacy_rhetoric.search import build_index

    model = save_tiny_pipeline(tmp_path / "pipeline")
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.txt", "b.txt"):
        (src / name).write_text(TEXT, encoding="utf8")
    with unreadable(monkeypatch, src / "b.txt"):
        summary = build_index(model, [src], tmp_path / "x.index", progress=False)
    assert summary["finished"] and summary["files_skipped"] == 1 and summary["papers"] == 1
    assert "Permission denied" in summary["skipped"][0]


INTERRUPT_AFTER = """
import importlib, os, signal, sys
module = importlib.import_module(sys.argv[1])
done = []
real = getattr(module, sys.argv[2])
def then_signal(*args, **kwargs):
    result = real(*args, **kwargs)
    done.append(1)
    if len(done) == 2:
        os.kill(os.getpid(), signal.SIGTERM)
    return result
setattr(module, sys.argv[2], then_signal)
import spacy_rhetoric.cli.index, spacy_rhetoric.cli.label  # registers the commands
from spacy_rhetoric.cli import app
app(sys.argv[3:], prog_name="spacy-rhetoric")
"""


@pytest.mark.slow
@pytest.mark.parametrize("command", ["label", "index"])
def test_an_interrupted_label_or_index_says_how_to_resume(tmp_path, command):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(6):
        (src / f"p{i}.txt").write_text(f"In this paper we propose a new method {i}.\nIt works well.\n", encoding="utf8")
    if command == "label":
        (tmp_path / "phrases.tsv").write_text("Showing the aim of the paper\tin this paper we propose a new method\t1\n")
        patch = ["spacy_rhetoric.corpus_builder.runners", "write_shard"]
        argv = ["label", str(src), "-o", str(tmp_path / "out"), "--phrases", str(tmp_path / "phrases.tsv"),
                "--n", "3", "--batch-size", "1"]
        lock, kept = tmp_path / "out" / ".lock", r"2 finished inputs in " + re.escape(str(tmp_path / "out" / "shards"))
    else:
        save_tiny_pipeline(tmp_path / "pipeline")
        patch = ["spacy_rhetoric.search.index", "_save_part"]
        argv = ["index", str(tmp_path / "pipeline"), str(src), "-o", str(tmp_path / "x.index"), "--part-sentences", "1"]
        lock, kept = tmp_path / ".x.index.lock", r"2 encoded parts in " + re.escape(str(tmp_path / "x.index.tmp-dir"))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(INTERRUPT_AFTER), *patch, *argv],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ, TERM="dumb"))
    folded = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout).split())
    assert proc.returncode == 143, proc.stdout + proc.stderr
    assert re.search(r"Interrupted \(SIGTERM\): " + kept + " kept; run the same command again to resume", folded), \
        proc.stdout + proc.stderr
    assert not lock.exists() and "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("workers", [["--n-process", "2"], ["--scheduler", "local", "--workers", "2"]])
def test_ctrl_c_with_worker_processes_is_one_line(blank_dir, tmp_path, workers):
    """Ctrl-C in a terminal reaches every process of the group: the
    ``--n-process`` and Dask workers leave it to the run (no traceback of
    theirs, no warning that they had to be killed)."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(150):
        (src / f"p{i}.txt").write_text(TEXT, encoding="utf8")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "spacy_rhetoric", "annotate", str(blank_dir), str(src), "-o",
                             str(out), *workers, "--batch-size", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=terminal_signals,
                            env=dict(os.environ, TERM="dumb"))
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            if (out / "shards").is_dir() and len(list((out / "shards").glob("*.jsonl"))) >= 3:
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        text = proc.communicate(timeout=300)[0].decode("utf8", "replace")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text and "WARNING" not in text, text
    assert "Interrupted (SIGINT)" in text and not (out / ".lock").exists()


def test_distributed_s_traceback_of_an_interrupted_wait_is_dropped():
    """distributed's ``sync`` logs a NameError through tornado when Ctrl-C lands
    before its wait's future exists; that record is dropped, others are kept."""
    import logging
    import sys

    from spacy_rhetoric.jobs.cluster import interrupted_wait_filter

    def record(error):
        try:
            raise error
        except Exception:
            exc_info = sys.exc_info()
        return logging.LogRecord("tornado.application", logging.ERROR, __file__, 1, "Exception in callback",
                                 None, exc_info)

    assert not interrupted_wait_filter(record(NameError(
        "cannot access free variable 'future' where it is not associated with a value in enclosing scope")))
    assert interrupted_wait_filter(record(NameError("name 'x' is not defined")))
    assert interrupted_wait_filter(record(ValueError("'future'")))
    assert interrupted_wait_filter(logging.LogRecord("tornado.application", logging.ERROR, __file__, 1, "x",
                                                     None, None))
