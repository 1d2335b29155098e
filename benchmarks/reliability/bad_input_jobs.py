"""The hostile probes of the corpus jobs (rows of the hostile table of
``bad_input.py``; also alone: ``--only-jobs``): inputs that could block or
stop a run -- FIFOs and sockets among the inputs, symbolic-link loops,
unreadable files --, ``--workers 64``, and SIGINT and SIGTERM in the middle of
a run (then a rerun that resumes).
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

from bad_input_common import GOOD_TEXT, TEI, Check, make_model, run, run_timed, summary_of


def setup_blocking_inputs(w: Path) -> None:
    """Inputs that could block or stop a run: a FIFO (and a socket) beside a
    good paper, two symbolic-link loops, a link to itself, a dangling link,
    a file nobody may read (root reads it anyway)."""
    import socket

    (w / "fifo_in").mkdir()
    (w / "fifo_in" / "good.txt").write_text(GOOD_TEXT + "\n", encoding="utf8")
    os.mkfifo(w / "fifo_in" / "pipe.txt")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(w / "fifo_in" / "sock.txt"))
    SOCKETS.append(sock)
    (w / "loops" / "sub").mkdir(parents=True)
    (w / "loops" / "a.txt").write_text(GOOD_TEXT + "\n", encoding="utf8")
    (w / "loops" / "sub" / "b.txt").write_text(GOOD_TEXT + "\n", encoding="utf8")
    (w / "loops" / "sub" / "uplink").symlink_to("..", target_is_directory=True)
    (w / "loops" / "sub" / "here").symlink_to("../sub", target_is_directory=True)
    (w / "loops" / "self.txt").symlink_to("self.txt")
    (w / "unreadable").mkdir()
    (w / "unreadable" / "good.txt").write_text(GOOD_TEXT + "\n", encoding="utf8")
    (w / "unreadable" / "dangling.txt").symlink_to("missing.txt")
    (w / "unreadable" / "closed.txt").write_text(GOOD_TEXT + "\n", encoding="utf8")
    (w / "unreadable" / "closed.txt").chmod(0)
    (w / "interrupt").mkdir()
    for i in range(150):
        (w / "interrupt" / f"p{i}.txt").write_text(f"We propose method {i}. It works on data {i}.\n", encoding="utf8")


SOCKETS: list = []  # kept open while the probes run


def unreadable_skipped(w: Path) -> bool:
    """good.txt annotated, the dangling link skipped and counted, the closed
    file skipped (or annotated, for root, who reads it)."""
    summary = summary_of(w, "unreadable_out")
    skipped = {s["input"] for s in summary.get("skipped", [])}
    closed_ok = "closed.txt" in skipped if os.geteuid() else summary.get("inputs_annotated") == 2
    return summary.get("inputs") == 3 and "dangling.txt" in skipped and closed_ok


def interrupt_probe(w: Path, sig: int) -> Tuple[int, str, float, bool]:
    """annotate over 150 papers, SIGINT or SIGTERM once 3 shards exist: (exit
    code, the line seen, seconds, OK: 128 + signal, one line saying how to
    resume, no lock left, and a rerun that resumes and finishes)."""
    import json

    out = w / f"interrupt_{sig}"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore", TERM="dumb",
               COLUMNS="200")
    start = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "spacy_rhetoric", "annotate", "model", "interrupt", "-o",
                                 str(out), "--batch-size", "1"], cwd=w, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 300
        while proc.poll() is None and time.time() < deadline:
            if (out / "shards").is_dir() and len(list((out / "shards").glob("*.jsonl"))) >= 3:
                break
            time.sleep(0.02)
        proc.send_signal(sig)
        code = proc.wait(300)
        seconds = time.perf_counter() - start
        log.seek(0)
        text = re.sub(r"\x1b\[[0-9;]*m", "", log.read().decode("utf8", "replace"))
    flat = re.sub(r"\s+", " ", text)
    match = re.search(r"(⚠ Interrupted.*?resume)", flat)
    seen = match.group(1) if match else flat[-160:]
    again, _ = run(["annotate", "model", "interrupt", "-o", str(out)], w)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    ok = (code == 128 + sig and match is not None and "Traceback" not in text and not (out / ".lock").exists()
          and again == 0 and summary.get("inputs_annotated") == 150 and summary.get("inputs_resumed", 0) >= 3)
    return code, seen, seconds, ok


def job_probes() -> List[Tuple[str, str, List[str], int, Check]]:
    """The job rows of the hostile probes: (item, probe, argv, expected exit
    code, check of the files afterwards)."""
    return [
        ("FIFO", "annotate a folder: a good paper, a FIFO, a socket", ["annotate", "model", "fifo_in", "-o",
                                                                      "fifo_out"], 0,
         lambda w: summary_of(w, "fifo_out").get("inputs_annotated") == 1
         and summary_of(w, "fifo_out").get("inputs_skipped") == 2),
        ("FIFO", "render a FIFO", ["render", "fifo_in/pipe.txt", "-m", "model", "-o", "fifo.html"], 1,
         lambda w: not (w / "fifo.html").exists()),
        ("FIFO", "align a FIFO with a paper", ["align", "fifo_in/pipe.txt", "p.tei.xml", "-m", "model"], 1,
         lambda w: True),
        ("links", "annotate: two symlink loops and a link to itself", ["annotate", "model", "loops", "-o",
                                                                       "loops_out"], 0,
         lambda w: summary_of(w, "loops_out").get("inputs_annotated") == 2
         and summary_of(w, "loops_out").get("inputs_skipped") == 1),
        ("unreadable", "annotate: a dangling link and a chmod 000 file beside a good one",
         ["annotate", "model", "unreadable", "-o", "unreadable_out"], 0, unreadable_skipped),
        ("workers", "annotate --scheduler local --workers 64", ["annotate", "model", "small", "-o", "workers_out",
                                                                 "--scheduler", "local", "--workers", "64"], 0,
         lambda w: summary_of(w, "workers_out").get("inputs_annotated") == 3),
    ]


def print_interrupt_probes(tmp: Path) -> int:
    """The interrupt rows of the hostile table; returns how many are OK."""
    n_ok = 0
    for sig in (signal.SIGINT, signal.SIGTERM):
        code, seen, seconds, ok = interrupt_probe(tmp, sig)
        n_ok += ok
        print(f"| interrupt | annotate, {signal.Signals(sig).name} after 3 shards, then rerun | `annotate model "
              f"interrupt -o interrupt_{sig}` + kill -{signal.Signals(sig).name[3:]} | {seen.replace('|', '/')} | "
              f"{code} | {seconds:.1f} | {'OK' if ok else 'NOT OK'} |")
    return n_ok


def run_job_probes(tmp: Path) -> None:
    """Only the hostile probes of the corpus jobs (``--only-jobs``): inputs
    that could block or stop a run, --workers, interrupts."""
    make_model(tmp / "model")
    (tmp / "p.tei.xml").write_text(TEI.format(title="A paper", body=GOOD_TEXT), encoding="utf8")
    (tmp / "small").mkdir()
    for i in range(3):
        (tmp / "small" / f"p{i}.txt").write_text(f"We propose method {i}. It works on data {i}. Results are good.\n",
                                                 encoding="utf8")
    setup_blocking_inputs(tmp)
    print("| item | probe | command | what the user sees | exit | s | OK |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    probes = job_probes()
    n_ok = 0
    for item, name, argv, expected, check in probes:
        code, seen, seconds, out = run_timed(argv, tmp)
        ok = code == expected and "Traceback" not in out and check(tmp)
        n_ok += ok
        print(f"| {item} | {name} | `{' '.join(argv)}` | {seen.replace('|', '/')} | {code} | {seconds:.1f} | "
              f"{'OK' if ok else 'NOT OK'} |")
    n_ok += print_interrupt_probes(tmp)
    print(f"\n{n_ok} of {len(probes) + 2} probes OK.")
