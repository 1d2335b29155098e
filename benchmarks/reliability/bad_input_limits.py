"""The limits of ``bad_input.py`` (``--only-limits``): pathological PDFs, a
1 MB sentence without end, and GROBID servers that never answer, drip or
answer 50 MB, each a fresh process with its wall time and peak RSS; then the
reading time of each pathological file alone.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

from bad_input_common import Check, StubServer, docbin_count, make_model


def pdf_bytes(pages: List[List[Tuple[float, float, float, str]]], turn: int = 0) -> bytes:
    """A minimal PDF of Helvetica text: pages of ``(size, x, y, text)`` runs
    (``turn``: 90 draws every run turned by its text matrix, x and y then in
    the turned frame)."""
    import io

    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", None,
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    kids = []
    for runs in pages:
        stream = b"".join((f"BT /F1 {size} Tf " + (f"0 1 -1 0 {612 - y} {x}" if turn else f"1 0 0 1 {x} {y}")
                           + f" Tm ({text}) Tj ET\n").encode("cp1252") for size, x, y, text in runs)
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"endstream")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objects)} 0 R "
                       "/Resources << /Font << /F1 3 0 R >> >> >>".encode())
        kids.append(len(objects))
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o
                                                                                    for o in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def setup_limits(tmp: Path) -> None:
    """The pathological inputs: a 100-page PDF of one flush-left paragraph,
    a 5-page PDF with a hyphen-wrapped 22,000-letter token and text after
    it, a 1-page PDF with one 64,000-letter line, a page of text turned 90°
    by its text matrix, an owner-password PDF that forbids copying, a 1 MB
    text without punctuation."""
    import random

    rnd = random.Random(0)
    vocab = "the of parsing model results we method data show that with for a in is this paper our study".split()
    line = lambda n: " ".join(rnd.choice(vocab) for _ in range(n))  # noqa: E731
    lim = tmp / "limits"
    for sub in ("flush", "hyphen", "line", "turned", "nocopy", "sentence", "budget"):
        (lim / sub).mkdir(parents=True)
    (lim / "flush" / "flush100.pdf").write_bytes(pdf_bytes([[(10, 72, 740 - 12 * i, line(12)) for i in range(55)]
                                                            for _ in range(100)]))
    token = ["a" * 88 + "-"] * 249 + ["a" * 88] + [line(8) for _ in range(25)]
    (lim / "hyphen" / "hyphen5.pdf").write_bytes(pdf_bytes([[(10, 72, 740 - 12 * i, text) for i, text in
                                                             enumerate(token[p:p + 55])] for p in range(0, 275, 55)]))
    (lim / "line" / "line64k.pdf").write_bytes(pdf_bytes([[(10, 72, 700, "We start here."), (0.1, 72, 680, "b" * 64000)]]))
    page = [(16, 150, 560, "A Turned Page"), (12, 72, 530, "1 Introduction")] + [
        (10, 72, 510 - 12 * i, line(10) + ".") for i in range(30)]
    (lim / "turned" / "turned90.pdf").write_bytes(pdf_bytes([page], turn=90))
    from pypdf import PdfReader, PdfWriter
    from pypdf.constants import UserAccessPermissions

    (lim / "plain.pdf").write_bytes(pdf_bytes([[(16, 150, 740, "A Plain Paper"), (12, 72, 710, "1 Introduction")]
                                               + [(10, 72, 690 - 12 * i, line(10) + ".") for i in range(30)]]))
    writer = PdfWriter(clone_from=PdfReader(lim / "plain.pdf"))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-128",
                   permissions_flag=UserAccessPermissions.PRINT)
    writer.write(lim / "nocopy" / "nocopy.pdf")
    text = " ".join(rnd.choice(vocab) for _ in range(220000))[:1000000]
    (lim / "sentence" / "sentence1m.txt").write_text(text + "\n", encoding="utf8")
    shutil.copy(lim / "flush" / "flush100.pdf", lim / "budget")
    shutil.copy(lim / "plain.pdf", lim / "budget")


def run_measured(args: List[str], cwd: Path, timeout: int = 600) -> Tuple[int, str, float, float, str]:
    """(exit code, the line seen, wall seconds, peak RSS in MB, the output) of
    ``python -m spacy_rhetoric ARGS`` (``-c CODE`` runs Python code instead)."""
    import resource  # noqa: F401  (wait4's rusage)
    import threading

    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore", TERM="dumb",
               COLUMNS="200")
    argv = [sys.executable, *(args if args[0] == "-c" else ["-m", "spacy_rhetoric", *args])]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0)
        text = re.sub(r"\x1b\[[0-9;]*m", "", out.read().decode("utf8", "replace"))
    flat = re.sub(r"\s+", " ", text)
    match = re.search(r"([✘⚠].*?)(?= [ℹ⚠✔✘] |$)", flat) or re.search(r"(✔.*?)(?= [ℹ⚠✔✘] |$)", flat)
    seen = (match.group(1) if match else flat[-160:]).strip()
    if "Traceback" in text:
        seen = "TRACEBACK: " + seen
    return proc.returncode, seen[:200], seconds, usage.ru_maxrss / 1024, text


READ_CODE = ("import sys, time, spacy; from spacy_rhetoric.readers.papers import read_paper; "
             "nlp = spacy.blank('en'); t, c = time.perf_counter(), time.process_time(); "
             "doc = read_paper(sys.argv[1], nlp, read_timeout=0); "
             "print(f'READ {time.perf_counter() - t:.2f} s ({time.process_time() - c:.2f} s CPU), {len(doc)} tokens, '"
             "f'{max(len(s) for s in doc.sents)} tokens in the longest sentence')")


class _Grobid(StubServer):
    """A stand-in GROBID server in a thread: 'silent' (never answers),
    'drip' (a byte every 5 s), 'huge' (a 50 MB answer)."""

    def __init__(self):
        super().__init__(self.answer)

    def answer(self, handler) -> None:
        mode = handler.path.split("/")[1]
        try:
            if mode == "silent":
                self.stop.wait(600)
                return
            handler.send_response(200)
            handler.end_headers()
            for _ in range(120 if mode == "drip" else 50):
                if mode == "drip" and self.stop.wait(5):
                    return
                handler.wfile.write(b"<" if mode == "drip" else b"<" * (1 << 20))
                handler.wfile.flush()
        except OSError:
            pass


def limit_probes(lim: Path, grobid: str) -> List[Tuple[str, List[str], int, Check]]:
    """(probe, argv, expected exit code, check) of the limits."""
    import json

    def sentences_bounded(w: Path) -> bool:
        path = w / "s1m_out" / "annotations.jsonl"
        records = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
        return len(records) > 100 and max(len(r["text"].split()) for r in records) <= 256

    return [
        ("100-page PDF, one flush-left paragraph", ["convert", "pdf", "flush/flush100.pdf", "flush.spacy"], 0,
         lambda w: docbin_count(w / "flush.spacy") == 1),
        ("5-page PDF, a hyphen-wrapped 22,000-letter token", ["convert", "pdf", "hyphen/hyphen5.pdf", "hyph.spacy"], 0,
         lambda w: docbin_count(w / "hyph.spacy") == 1),
        ("1-page PDF, one 64,000-letter line", ["convert", "pdf", "line/line64k.pdf", "line.spacy"], 0,
         lambda w: docbin_count(w / "line.spacy") == 1),
        ("text turned 90° by the text matrix", ["convert", "pdf", "turned/turned90.pdf", "turned.spacy"], 0,
         lambda w: docbin_count(w / "turned.spacy") == 1),
        ("owner password forbids copying", ["convert", "pdf", "nocopy/nocopy.pdf", "nocopy.spacy"], 0,
         lambda w: docbin_count(w / "nocopy.spacy") == 1),
        ("annotate: 1 MB text without punctuation", ["annotate", "../model", "sentence", "-o", "s1m_out"], 0,
         sentences_bounded),
        ("convert --read-timeout 1: the 100-page PDF + a plain one", ["convert", "pdf", "budget", "budget.spacy",
                                                                      "--read-timeout", "1"], 0,
         lambda w: docbin_count(w / "budget.spacy") == 1),
        ("--grobid: a server that never answers (--grobid-timeout 5)",
         ["convert", "pdf", "plain.pdf", "g1.spacy", "--grobid", grobid + "/silent", "--grobid-timeout", "5"], 1,
         lambda w: True),
        ("--grobid: a server that drips a byte every 5 s (--grobid-timeout 12)",
         ["convert", "pdf", "plain.pdf", "g2.spacy", "--grobid", grobid + "/drip", "--grobid-timeout", "12"], 1,
         lambda w: True),
        ("--grobid: a 50 MB answer", ["convert", "pdf", "plain.pdf", "g3.spacy", "--grobid", grobid + "/huge"], 1,
         lambda w: True),
    ]


def run_limit_probes(tmp: Path) -> Tuple[int, int]:
    """Time and peak memory of the limit probes (each a fresh process), and
    the reading time of each pathological file alone."""
    if not (tmp / "model").exists():
        make_model(tmp / "model")
    setup_limits(tmp)
    lim = tmp / "limits"
    grobid = _Grobid()
    print("| probe | command | what the user sees | exit | s | peak RSS MB | OK |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    n_ok = 0
    probes = limit_probes(lim, grobid.url)
    try:
        for name, argv, expected, check in probes:
            code, seen, seconds, peak, out = run_measured(argv, lim)
            ok = code == expected and "Traceback" not in out and check(lim)
            if "nocopy" in name or "owner" in name:
                ok = ok and "forbids copying" in out
                seen = next((x.strip() for x in out.splitlines() if "forbids copying" in x), seen)[-150:]
            n_ok += ok
            shown = " ".join(a if len(a) < 40 else "…/" + Path(a).name for a in argv).replace(grobid.url, "URL")
            print(f"| {name} | `{shown}` | {seen.replace('|', '/').replace(grobid.url, 'URL')} | {code} | "
                  f"{seconds:.1f} | {peak:.0f} | {'OK' if ok else 'NOT OK'} |")
    finally:
        grobid.close()
    print(f"\n{n_ok} of {len(probes)} probes OK.\n")
    counts = (n_ok, len(probes))
    print("| file | reading alone (`readers.papers.read_paper`, blank pipeline) | peak RSS MB |")
    print("| --- | --- | --- |")
    for path in ("flush/flush100.pdf", "hyphen/hyphen5.pdf", "line/line64k.pdf", "sentence/sentence1m.txt"):
        code, _, _, peak, out = run_measured(["-c", READ_CODE, path], lim)
        found = re.search(r"READ (.*)", out)
        size = (lim / path).stat().st_size / 1024
        print(f"| {path} ({size:.0f} KB) | {found.group(1) if found else 'exit %d' % code} | {peak:.0f} |")
    return counts
