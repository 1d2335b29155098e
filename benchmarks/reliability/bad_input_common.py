"""The probe runner and the helpers the bad-input probes share (``bad_input.py``
and its ``bad_input_*.py`` modules).

Each probe runs ``python -m spacy_rhetoric ...`` in a fresh process, offline,
in the scratch directory. The "seen" column is the failure line (wasabi's ✘
line, or typer's "Invalid value" for a bad option), colours stripped and
wrapped lines joined. ``make_model`` writes the untrained blank-pipeline
classifier and encoder the probes run, so no probe needs a trained model.
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, Tuple


def run(args: List[str], cwd: Path, timeout: int = 600) -> Tuple[int, str]:
    code, seen, _, _ = run_timed(args, cwd, timeout)
    return code, seen


def run_timed(args: List[str], cwd: Path, timeout: int = 600, env_extra=None,
              stdin=None) -> Tuple[int, str, float, str]:
    """(exit code, the line seen, wall seconds, the whole output); ``stdin``: text typed in."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore",
               TERM="dumb", COLUMNS="200", **(env_extra or {}))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "spacy_rhetoric", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, input=stdin)
    seconds = time.perf_counter() - start
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + "\n" + proc.stderr)
    text = " ".join(ln.strip().strip("│").strip() for ln in out.splitlines() if ln.strip())
    text = re.sub(r"[╭╮╰╯─]+", " ", text)
    text = re.sub(r"\s+", " ", text)
    match = (re.search(r"(✘.*?)(?= [ℹ⚠✔✘] |$)", text) or re.search(r"(Invalid value.*?)(?= Try |$)", text)
             or re.search(r"(⚠.*?)(?= [ℹ⚠✔✘] |$)", text) or re.search(r"(✔.*?)(?= [ℹ⚠✔✘] |$)", text)
             or re.search(r"(ℹ.*?)(?= [ℹ⚠✔✘] |$)", text))
    seen = match.group(1) if match else text[-160:]
    seen = re.split(r" \S+: +\d+%", seen)[0].strip()  # a progress bar after the line
    if "Traceback" in out:
        seen = "TRACEBACK: " + seen
    return proc.returncode, seen[:200], seconds, out


def make_model(path: Path) -> None:
    import spacy

    import spacy_rhetoric  # noqa: F401  (registers the factories)

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    clf = nlp.add_pipe("rhetoric_function_classifier")
    enc = nlp.add_pipe("rhetoric_sentence_encoder")
    for label in ("background", "objective", "result"):
        clf.add_label(label)
        enc.add_label(label)
    nlp.initialize()
    nlp.to_disk(path)


TEI = ('<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>{title}</title>'
       '</titleStmt></fileDesc></teiHeader><text><body><div><head>Introduction</head><p>{body}</p></div>'
       '</body></text></TEI>')
GOOD_TEXT = ("In this paper we propose a new method for parsing long sentences. "
             "The rest of the paper is organized as follows. Table 2 shows the results of our tagging study.")


Check = Callable[[Path], bool]


def jsonl_ids(path: Path) -> set:
    import json

    if not path.exists():
        return set()
    return {(r["paper_id"], r["input"]) for r in map(json.loads, path.read_text(encoding="utf8").splitlines())}


def docbin_count(path: Path) -> int:
    import spacy
    from spacy.tokens import DocBin

    return len(list(DocBin().from_disk(path).get_docs(spacy.blank("en").vocab))) if path.exists() else 0


def summary_of(w: Path, out: str) -> dict:
    import json

    path = w / out / "summary.json"
    return json.loads(path.read_text(encoding="utf8")) if path.exists() else {}


def index_inputs(path: Path) -> set:
    import sqlite3

    if not (path / "sentences.sqlite").exists():
        return set()
    con = sqlite3.connect(str(path / "sentences.sqlite"))
    try:
        return {row[0] for row in con.execute("SELECT DISTINCT input FROM sentences")}
    finally:
        con.close()


class StubServer:
    """A stand-in HTTP server in a thread on a free local port (``url``):
    every POST's body is read, then ``respond(handler)`` answers it;
    ``close()`` stops it (and sets ``stop``, which a slow answer may wait on)."""

    def __init__(self, respond: Callable):
        import http.server
        import threading

        self.stop = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                respond(self)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
