"""The file probes of the hostile table of ``bad_input.py``: odd names, a full
disk, two runs on one output, damaged stores, encodings, killed runs.
"""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, Tuple

from bad_input_common import Check, docbin_count, index_inputs, jsonl_ids

FILES_PAPER = "# A title\n\nAbstract\n\nWe study parsing.\n\n1 Introduction\n\nParsing matters. We propose a method.\n"
BACKGROUND: dict = {}  # probe name -> the first run a lock probe races (started just before the probe)


def setup_files(tmp: Path) -> bool:
    """The scratch files of the file probes; True when a full disk could be
    made (a 1 MiB tmpfs at full/, filled: needs root; unmounted at exit)."""
    import atexit
    import sqlite3

    w = tmp
    (w / "odd_names").mkdir()
    shutil.copy(w / "small" / "p0.txt", w / "odd_names")
    (w / "odd_names" / os.fsdecode(b"caf\xe9_latin1.txt")).write_text("We study parsing. Results are good.\n",
                                                                      encoding="utf8")
    (w / "u16.txt").write_bytes(FILES_PAPER.encode("utf-16"))
    (w / "u32.txt").write_bytes(FILES_PAPER.encode("utf-32"))
    (w / "cr.txt").write_bytes(FILES_PAPER.replace("\n", "\r").encode("utf8"))
    (w / "lockcorpus").mkdir()
    for i in range(150):
        (w / "lockcorpus" / f"p{i}.txt").write_text(f"We propose method {i}. It works on data {i}. We agree.\n",
                                                    encoding="utf8")
    damages = {"extra": "ALTER TABLE sentences ADD COLUMN extra TEXT",
               "dropped": "ALTER TABLE sentences DROP COLUMN heading",
               "badjson": "UPDATE sentences SET scores = '{not json'",
               "binary": "UPDATE sentences SET text = X'00ff10'",
               "noids": "UPDATE sentences SET id = id + 100"}
    for name, statement in damages.items():
        shutil.copytree(w / "good.index", w / f"{name}.index")
        con = sqlite3.connect(w / f"{name}.index" / "sentences.sqlite")
        with con:
            con.execute(statement)
        con.close()
    from spacy_rhetoric.search import build_index

    build_index(w / "model", [w / "small"], w / "resume.index", part_sentences=2, stop_after_parts=1, progress=False)
    con = sqlite3.connect(w / "resume.index.tmp-dir" / "sentences.sqlite")
    con.execute("ALTER TABLE sentences DROP COLUMN heading")
    con.close()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (w / "stale_out").mkdir()
    (w / "stale_out" / f".tmp-annotations.jsonl.{int(dead.stdout)}").write_text('{"half": ', encoding="utf8")
    (w / "full").mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(w / "full")],
                      capture_output=True).returncode != 0:
        return False
    atexit.register(subprocess.run, ["umount", str(w / "full")], capture_output=True)
    try:
        with open(w / "full" / "filler", "wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
    except OSError:
        pass
    return True


def start_first_run(argv: List[str], lock: Path) -> Callable[[Path], None]:
    """A 'before' hook: start ``argv`` in the background, wait for it to
    hold ``lock`` and pause it there (SIGSTOP), so the probe, the same
    command, is a second run while the first holds the output."""
    def before(w: Path) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
        proc = subprocess.Popen([sys.executable, "-m", "spacy_rhetoric", *argv], cwd=w, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        BACKGROUND[" ".join(argv)] = proc
        deadline = time.time() + 120
        while not (w / lock).exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGSTOP)
    return before


def first_run_finished(argv: List[str], done: Path) -> Check:
    def check(w: Path) -> bool:
        proc = BACKGROUND.get(" ".join(argv))
        if proc is None:
            return False
        os.kill(proc.pid, signal.SIGCONT)  # the first run goes on and finishes
        return proc.wait(600) == 0 and (w / done).exists()
    return check


def no_temp_left(folder: str) -> Check:
    return lambda w: not [p for p in (w / folder).rglob(".tmp-*")] if (w / folder).exists() else True


def cr_headings_kept(w: Path) -> bool:
    import spacy
    from spacy.tokens import DocBin

    from spacy_rhetoric import extensions as ext

    if not (w / "cr.spacy").exists():
        return False
    doc = next(DocBin(store_user_data=True).from_disk(w / "cr.spacy").get_docs(spacy.blank("en").vocab))
    return ext.get_doc_value(doc, ext.TITLE) == "A title" and [
        ext.get_span_value(s, ext.HEADING) for s in doc.sents] == ["Abstract", "1 Introduction", "1 Introduction"]


def file_probes(tmp: Path, full_disk: bool) -> List[Tuple[str, str, List[str], int, Check]]:
    """The file probes; the full-disk ones only where a full disk could be made."""
    import json

    lock_index = ["index", "model", "lockcorpus", "-o", "locked.index", "--part-sentences", "1"]
    lock_annotate = ["annotate", "model", "lockcorpus", "-o", "locked_ann"]
    BEFORE["second index run on one output"] = start_first_run(lock_index, Path(".locked.index.lock"))
    BEFORE["second annotate run on one output"] = start_first_run(lock_annotate, Path("locked_ann/.lock"))
    odd_ids = {"caf\\xe9_latin1", "p0"}
    probes = [
        ("names", "annotate: a file name that is not UTF-8", ["annotate", "model", "odd_names", "-o", "odd_ann"], 0,
         lambda w: {p for p, _ in jsonl_ids(w / "odd_ann" / "annotations.jsonl")} == odd_ids),
        ("names", "convert: a file name that is not UTF-8", ["convert", "auto", "odd_names", "odd.spacy"], 0,
         lambda w: docbin_count(w / "odd.spacy") == 2),
        ("names", "index: a file name that is not UTF-8", ["index", "model", "odd_names", "-o", "odd.index"], 0,
         lambda w: index_inputs(w / "odd.index") == {"caf\\xe9_latin1.txt", "p0.txt"}
         and not (w / "odd.index.tmp-dir").exists()),
        ("lock", "second index run on one output", lock_index, 1, first_run_finished(lock_index, Path("locked.index"))),
        ("lock", "second annotate run on one output", lock_annotate, 1,
         first_run_finished(lock_annotate, Path("locked_ann/annotations.jsonl"))),
        ("store", "search: a store with an extra column", ["search", "extra.index", "We propose a method."], 1,
         lambda w: True),
        ("store", "search: a store that lost a column", ["search", "dropped.index", "We propose a method."], 1,
         lambda w: True),
        ("store", "search: bad JSON in scores", ["search", "badjson.index", "We propose a method.", "-k", "9"], 1,
         lambda w: True),
        ("store", "search: binary text", ["search", "binary.index", "We propose a method.", "-k", "9"], 1,
         lambda w: True),
        ("store", "search: ids missing", ["search", "noids.index", "We propose a method."], 1, lambda w: True),
        ("store", "index: resume a build whose store lost a column",
         ["index", "model", "small", "-o", "resume.index", "--part-sentences", "2"], 1,
         lambda w: (w / "resume.index.tmp-dir").exists()),
        ("store", "index --overwrite: that damaged build discarded",
         ["index", "model", "small", "-o", "resume.index", "--part-sentences", "2", "--overwrite"], 0,
         lambda w: (w / "resume.index" / "index.faiss").exists()),
        ("encoding", "convert text: UTF-16 with a BOM", ["convert", "text", "u16.txt", "u16.spacy"], 0,
         lambda w: docbin_count(w / "u16.spacy") == 1),
        ("encoding", "convert auto: UTF-32 with a BOM", ["convert", "auto", "u32.txt", "u32.spacy"], 0,
         lambda w: docbin_count(w / "u32.spacy") == 1),
        ("line ends", "convert text: lone-CR line ends (title, headings)", ["convert", "text", "cr.txt", "cr.spacy"], 0,
         cr_headings_kept),
        ("temp files", "annotate: .tmp-annotations.jsonl.PID of a dead run", ["annotate", "model", "small", "-o",
                                                                       "stale_out"], 0,
         lambda w: not list((w / "stale_out").glob(".tmp-*"))
         and json.loads((w / "stale_out" / "summary.json").read_text())["inputs_annotated"] == 3),
    ]
    if full_disk:
        probes += [
            ("disk", "convert to a full disk", ["convert", "text", "cr.txt", "full/o.spacy"], 1,
             lambda w: not (w / "full" / "o.spacy").exists() and no_temp_left("full")(w)),
            ("disk", "annotate to a full disk", ["annotate", "model", "small", "-o", "full/ann"], 1,
             no_temp_left("full")),
            ("disk", "index to a full disk", ["index", "model", "small", "-o", "full/x.index"], 1,
             lambda w: not (w / "full" / "x.index").exists()),
        ]
    return probes


BEFORE: dict = {}  # probe name -> a hook run just before it (file probes)
