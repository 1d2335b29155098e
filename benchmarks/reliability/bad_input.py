"""Bad-input probes: ordinary mistakes a user makes with the command line, what
they see now and the exit code. Prints two Markdown tables (docs/notes/benchmark-log.md,
"Bad input"): the ordinary mistakes, then the hostile probes (a hostile but
ordinary user: special output files, same-named papers, outputs inside the
pipeline, a 1.2M-character paper, deeply nested XML, entity declarations, bad
link inputs, huge --n-process, corrupt indexes, pickles, FIFOs and sockets
among the inputs, symbolic-link loops, unreadable files, --workers 64, SIGINT
and SIGTERM in the middle of a run, ...), each with its
command, what the user sees, the exit code, the wall time and whether it is
OK: the expected exit code, no traceback, and the check that says no input or
special file was touched (or that the result is right). Then the limits
(`--only-limits`): pathological PDFs, a 1 MB sentence and GROBID servers
that never answer, drip or answer 50 MB, with wall time and peak RSS.

    .venv/bin/python benchmarks/reliability/bad_input.py [--data ../shared/data] [--only-hostile] [--only-limits]
        [--only-jobs]

The reading probes (also alone: `--only-reading`): a model folder that asks to run its own code,
escape sequences in paper text, a runaway section rule, a tampered pipeline config, a Chinese
paper, text that begins with "<", a PDF with a 250-byte name through GROBID, a folder with files
that are not papers.

Every probe runs `python -m spacy_rhetoric ...` in a scratch directory with
tiny inputs written here (a two-abstract CSAbstruct file, an untrained
blank-pipeline classifier for `evaluate`/`align`), so it needs no trained model.
The "seen" column is the failure line (wasabi's ✘ line, or typer's "Invalid
value" for a bad option), colours stripped and wrapped lines joined.
"""
import argparse
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple

ABSTRACT = (
    '{"abstract_id": %d, "sentences": ["We study parsing.", "We propose a method.", '
    '"Results improve."], "labels": ["background", "objective", "result"], "confs": [1, 1, 1]}\n'
)


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

# -- the hostile probes ----------------------------------------------------------------------------

TEI = ('<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>{title}</title>'
       '</titleStmt></fileDesc></teiHeader><text><body><div><head>Introduction</head><p>{body}</p></div>'
       '</body></text></TEI>')
JATS = ('<article><front><article-meta><title-group><article-title>T</article-title></title-group>'
        '</article-meta></front><body><sec><title>Intro</title><p>{}</p></sec></body></article>')
GOOD_TEXT = ("In this paper we propose a new method for parsing long sentences. "
             "The rest of the paper is organized as follows. Table 2 shows the results of our tagging study.")


def nested(tag: str, depth: int, inner: str = "Deep text.") -> str:
    return f"<{tag}>" * depth + inner + f"</{tag}>" * depth


def special_node(path: Path) -> str:
    """A character device like /dev/null (root), else a FIFO; its kind."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return "char device"
    except OSError:
        os.mkfifo(path)
        return "FIFO"


def is_special(path: Path) -> bool:
    mode = os.lstat(path).st_mode
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def tree_digest(path: Path) -> dict:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def jsonl_ids(path: Path) -> set:
    import json

    if not path.exists():
        return set()
    return {(r["paper_id"], r["input"]) for r in map(json.loads, path.read_text(encoding="utf8").splitlines())}


def docbin_count(path: Path) -> int:
    import spacy
    from spacy.tokens import DocBin

    return len(list(DocBin().from_disk(path).get_docs(spacy.blank("en").vocab))) if path.exists() else 0


def setup_hostile(tmp: Path, data: Path) -> None:
    """The scratch files of the hostile probes (WORK/)."""
    w = tmp
    (w / "p.tei.xml").write_text(TEI.format(title="A paper", body=GOOD_TEXT), encoding="utf8")
    (w / "dev").mkdir()
    w_kind = special_node(w / "dev" / "mynull")
    (w / "dev" / "kind.txt").write_text(w_kind, encoding="utf8")
    os.mkfifo(w / "fifo")
    for sub, text in (("a", GOOD_TEXT), ("b", "We study tagging. Tagging works well on our data.")):
        (w / "same" / sub).mkdir(parents=True)
        (w / "same" / sub / "paper.xml").write_text(TEI.format(title=sub, body=text), encoding="utf8")
    (w / "pair").mkdir()
    (w / "pair" / "X.tei.xml").write_text(TEI.format(title="X", body=GOOD_TEXT), encoding="utf8")
    (w / "pair" / "X.json").write_text('{"paper_id": "X", "body_text": [{"text": "We study tagging. It works.", '
                                       '"section": "Intro"}]}', encoding="utf8")
    shutil.copytree(w / "model", w / "pc")
    (w / "big").mkdir()
    shutil.copy(w / "p.tei.xml", w / "big" / "good.tei.xml")
    (w / "big" / "big.txt").write_text(("We study parsing of long sentences and it works well " * 22000)[:1200001],
                                       encoding="utf8")
    (w / "biglabel").mkdir()
    (w / "biglabel" / "good.txt").write_text(GOOD_TEXT.replace(". ", ".\n") + "\n", encoding="utf8")
    (w / "biglabel" / "big.txt").write_text(("word " * 240001)[:1200001] + "\n", encoding="utf8")
    (w / "line360k.txt").write_text(GOOD_TEXT.replace(". ", ".\n") + "\n" + ("token " * 60000) + "x\n",
                                    encoding="utf8")
    (w / "inl1000.nxml").write_text(JATS.format(nested("italic", 1000)), encoding="utf8")
    (w / "hi1000.tei.xml").write_text(TEI.format(title="T", body=nested("hi", 1000)), encoding="utf8")
    (w / "deep").mkdir()
    shutil.copy(w / "inl1000.nxml", w / "deep")
    shutil.copy(w / "p.tei.xml", w / "deep")
    topic = w / "cls" / "D99-0001"
    for sub in ("Reference_XML", "annotation"):
        (topic / sub).mkdir(parents=True)
    (topic / "Reference_XML" / "D99-0001.xml").write_text(
        '<PAPER><S sid="0">T</S>' + nested("SECTION", 1000, '<S sid="1">x</S>') + "</PAPER>", encoding="utf8")
    ent = ('<?xml version="1.0" encoding="UTF-16"?>\n<!DOCTYPE TEI [<!ENTITY a "' + "y" * 9000 + '">]>\n'
           + TEI.format(title="T", body="&a;" * 100 + " A paper."))
    (w / "ent16b.tei.xml").write_bytes(ent.encode("utf-16"))
    bomb = ('<?xml version="1.0"?>\n<!DOCTYPE PAPER [<!ENTITY a "' + "x" * 100 + '">'
            '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>\n'
            '<PAPER><S sid="0">Title</S><ABSTRACT><S sid="1">&c;&c;&c;&c;&c;&c;&c;&c;</S></ABSTRACT></PAPER>')
    btopic = w / "bombtopics" / "D99-0002"
    (btopic / "Reference_XML").mkdir(parents=True)
    (btopic / "annotation").mkdir()
    (btopic / "Reference_XML" / "D99-0002.xml").write_text(bomb, encoding="utf8")
    (w / "bomb.xml").write_text(bomb, encoding="utf8")
    (w / "empty.txt").write_text("", encoding="utf8")
    (w / "cit.txt").write_text("We use the parser of Smith.\nIt is fast.\n", encoding="utf8")
    (w / "cit_latin1.txt").write_bytes("Caf\u00e9 na\u00efve parsing.\n".encode("latin-1"))
    (w / "cit_binary.txt").write_bytes(bytes(range(256)) * 4)
    (w / "huge_header.bin").write_bytes(b"100000000 100000\n" + b"\x00" * 1024)
    (w / "pickled_loss").mkdir()
    shutil.copytree(w / "model", w / "pickled_loss" / "pipeline")
    import pickle

    class Boom:
        def __reduce__(self):
            return (print, ("PICKLE RAN",))

    (w / "pickled_loss" / "pipeline" / "rhetoric_sentence_encoder" / "loss").write_bytes(pickle.dumps({"x": Boom()}))
    (w / "abbrev.txt").write_text("Smith et al. (2020) propose a parser. It works well (see Fig. 2 for details). "
                                  "We agree.\n", encoding="utf8")
    (w / "foreign").mkdir()
    (w / "foreign" / "annotations.jsonl").write_text("somebody's file\n", encoding="utf8")
    (w / "foreign" / "summary.json").write_text("{}\n", encoding="utf8")
    (w / "notes.txt").write_text("my notes\n", encoding="utf8")
    (w / "bad_only").mkdir()
    (w / "bad_only" / "bad.txt").write_bytes(b"\x00\x01 binary")
    (w / "labelin").mkdir()
    (w / "labelin" / "a.txt").write_text(GOOD_TEXT.replace(". ", ".\n") + "\n", encoding="utf8")
    (w / "small").mkdir()
    for i in range(3):
        (w / "small" / f"p{i}.txt").write_text(f"We propose method {i}. It works on data {i}. Results are good.\n",
                                              encoding="utf8")
    import spacy
    from spacy.tokens import DocBin

    from spacy_rhetoric.readers.common import doc_from_sentences

    DocBin(docs=[doc_from_sentences(spacy.blank("en"), ["We parse.", "It works."], labels=["objective", "result"])],
           store_user_data=True).to_disk(w / "X.spacy")
    setup_blocking_inputs(w)


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


def summary_of(w: Path, out: str) -> dict:
    import json

    path = w / out / "summary.json"
    return json.loads(path.read_text(encoding="utf8")) if path.exists() else {}


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


def align_sentences(tmp: Path) -> Tuple[int, int]:
    """Sentences of abbrev.txt as align reads it and as convert text reads it."""
    import spacy

    from spacy_rhetoric.apps.alignment import read_paper as align_read
    from spacy_rhetoric.readers.papers import read_paper

    nlp = spacy.load(tmp / "model")
    a = len(list(align_read(tmp / "abbrev.txt", nlp).sents))
    b = len(list(read_paper(tmp / "abbrev.txt", spacy.blank("en"), fmt="text").sents))
    return a, b


Check = Callable[[Path], bool]


def hostile_probes(tmp: Path, data: Path) -> List[Tuple[str, str, List[str], int, Check]]:
    """(item, probe, argv, expected exit code, check of the files afterwards)."""
    import json

    pc_before = tree_digest(tmp / "pc")
    unchanged_pc: Check = lambda w: tree_digest(w / "pc") == pc_before  # noqa: E731
    T = "C98-1097,D09-1023"
    return [
        ("1", "convert to a device node (mknod c 1 3)", ["convert", "tei", "p.tei.xml", "dev/mynull"], 1,
         lambda w: is_special(w / "dev" / "mynull")),
        ("1", "render -o a FIFO", ["render", "p.tei.xml", "-m", "model", "-o", "fifo"], 1,
         lambda w: is_special(w / "fifo")),
        ("2", "annotate same/a/paper.xml + same/b/paper.xml", ["annotate", "model", "same", "-o", "same_out"], 0,
         lambda w: {p for p, _ in jsonl_ids(w / "same_out" / "annotations.jsonl")} == {"a/paper", "b/paper"}),
        ("2", "annotate X.tei.xml beside X.json", ["annotate", "model", "pair", "-o", "pair_out"], 0,
         lambda w: jsonl_ids(w / "pair_out" / "annotations.jsonl") == {("X.tei.xml", "X.tei.xml"),
                                                                         ("X.json", "X.json")}),
        ("2", "index of same/ (rows carry their input)", ["index", "model", "same", "-o", "same.index"], 0,
         lambda w: _index_inputs(w / "same.index") == {"a/paper.xml", "b/paper.xml"}),
        ("3", "render -m pc -o pc/config.cfg", ["render", "p.tei.xml", "-m", "pc", "-o", "pc/config.cfg"], 1,
         unchanged_pc),
        ("3", "evaluate pc X.spacy -o pc/meta.json", ["evaluate", "pc", "X.spacy", "-o", "pc/meta.json"], 1,
         unchanged_pc),
        ("3", "annotate -o pc/vocab", ["annotate", "pc", "p.tei.xml", "-o", "pc/vocab"], 1, unchanged_pc),
        ("4", "convert auto: good TEI + 1.2M-char .txt", ["convert", "auto", "big", "big.spacy"], 0,
         lambda w: docbin_count(w / "big.spacy") == 2),
        ("4", "annotate: good TEI + 1.2M-char .txt", ["annotate", "model", "big", "-o", "big_ann"], 0,
         lambda w: {p for p, _ in jsonl_ids(w / "big_ann" / "annotations.jsonl")} == {"good", "big"}),
        ("4", "index: good TEI + 1.2M-char .txt", ["index", "model", "big", "-o", "big.index"], 0,
         lambda w: (w / "big.index" / "index.faiss").exists()),
        ("4", "render -m: a 1.2M-char .txt", ["render", "big/big.txt", "-m", "model", "-o", "big.html"], 0,
         lambda w: (w / "big.html").exists()),
        ("4", "label: good .txt + a 1.2M-char line", ["label", "biglabel", "-o", "big_label", "--phrases",
                                                      str(data / "iwatsuki2021-fe-database-cl")], 0,
         lambda w: "over 10,000 characters" in (w / "big_label" / "summary.json").read_text(encoding="utf8")
         if (w / "big_label" / "summary.json").exists() else False),
        ("5", "convert jats: 1,000 nested <italic>", ["convert", "jats", "inl1000.nxml", "o5.spacy"], 1,
         lambda w: not (w / "o5.spacy").exists()),
        ("5", "convert tei: 1,000 nested <hi>", ["convert", "tei", "hi1000.tei.xml", "o5.spacy"], 1,
         lambda w: not (w / "o5.spacy").exists()),
        ("5", "convert clscisumm: 1,000 nested <SECTION>", ["convert", "clscisumm", "cls", "o5.spacy"], 1,
         lambda w: not (w / "o5.spacy").exists()),
        ("5", "annotate a folder: nested JATS + good TEI", ["annotate", "model", "deep", "-o", "deep_out"], 0,
         lambda w: json.loads((w / "deep_out" / "summary.json").read_text())["inputs_skipped"] == 1),
        ("6", "convert tei: UTF-16 file declaring entities", ["convert", "tei", "ent16b.tei.xml", "o6.spacy"], 1,
         lambda w: not (w / "o6.spacy").exists()),
        ("6", "convert clscisumm: entity bomb", ["convert", "clscisumm", "bombtopics", "o6.spacy"], 1,
         lambda w: not (w / "o6.spacy").exists()),
        ("6", "link: entity-bomb reference", ["link", "bomb.xml", "cit.txt", "--no-wmd"], 1, lambda w: True),
        ("6", "align: entity-bomb paper", ["align", "bomb.xml", "cit.txt", "-m", "model"], 1, lambda w: True),
        ("7", "link: empty reference file", ["link", "empty.txt", "cit.txt", "--no-wmd"], 1, lambda w: True),
        ("7", "link: latin-1 citances", ["link", "cit.txt", "cit_latin1.txt", "--no-wmd"], 1, lambda w: True),
        ("7", "link: latin-1 reference", ["link", "cit_latin1.txt", "cit.txt", "--no-wmd"], 1, lambda w: True),
        ("7", "link: binary citances", ["link", "cit.txt", "cit_binary.txt", "--no-wmd"], 1, lambda w: True),
        ("8", "annotate --n-process 200, one paper", ["annotate", "model", "p.tei.xml", "-o", "np_out",
                                                       "--n-process", "200"], 0,
         lambda w: (w / "np_out" / "annotations.jsonl").exists()),
        ("8", "label --n-process 100000", ["label", "labelin", "-o", "np_label", "--n-process", "100000",
                                           "--phrases", str(data / "iwatsuki2021-fe-database-cl")], 0,
         lambda w: (w / "np_label" / "train.jsonl").exists()),
        ("9", "search: corrupt sentences.sqlite", ["search", "corrupt.index", "We propose a method."], 1,
         lambda w: True),
        ("9", "search: index.json without 'pipeline'", ["search", "edited.index", "We propose a method."], 1,
         lambda w: True),
        ("9", "index --index-type IVF4096,PQ8 on 9 sentences", ["index", "model", "small", "-o", "ivf.index",
                                                                "--index-type", "IVF4096,PQ8"], 1,
         lambda w: not (w / "ivf.index").exists() and not (w / "ivf.index.tmp-dir").exists()),
        ("9", "a pickle in the encoder's loss file", ["render", "p.tei.xml", "-m", "pickled_loss/pipeline", "-o",
                                                      "pl.html"], 1, lambda w: not (w / "pl.html").exists()),
        ("9", "link --vectors header 100000000 100000", ["link", "cit.txt", "cit.txt", "--vectors",
                                                         "huge_header.bin"], 1, lambda w: True),
        ("10", "annotate -o DIR with somebody's annotations.jsonl", ["annotate", "model", "p.tei.xml", "-o",
                                                                     "foreign"], 1,
         lambda w: (w / "foreign" / "annotations.jsonl").read_text(encoding="utf8") == "somebody's file\n"),
        ("10", "convert over a file it did not write", ["convert", "tei", "p.tei.xml", "notes.txt"], 1,
         lambda w: (w / "notes.txt").read_text(encoding="utf8") == "my notes\n"),
        ("10", "annotate with no usable input", ["annotate", "model", "bad_only", "-o", "failed_out"], 1,
         lambda w: not (w / "failed_out").exists()),
        ("10", "label --n 1000", ["label", "labelin", "-o", "n1000", "--n", "1000", "--phrases",
                                  str(data / "iwatsuki2021-fe-database-cl")], 1,
         lambda w: not (w / "n1000").exists()),
        ("10", "label: one 360 KB line", ["label", "line360k.txt", "-o", "l360", "--phrases",
                                          str(data / "iwatsuki2021-fe-database-cl")], 0,
         lambda w: "360,001 characters" in (w / "l360" / "summary.json").read_text(encoding="utf8")
         if (w / "l360" / "summary.json").exists() else False),
        ("12", "link --evaluate (two topics; rows not keyed counted)",
         ["link", "--evaluate", str(data / "cl-scisumm" / "training-40-manual"), "--topics", T, "--no-wmd",
          "--no-wce", "--no-denoise"], 0, lambda w: True),
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


# -- files: odd names, a full disk, two runs on one output, damaged stores, encodings, killed runs --

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
         lambda w: _index_inputs(w / "odd.index") == {"caf\\xe9_latin1.txt", "p0.txt"}
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


def _index_inputs(path: Path) -> set:
    import sqlite3

    if not (path / "sentences.sqlite").exists():
        return set()
    con = sqlite3.connect(str(path / "sentences.sqlite"))
    try:
        return {row[0] for row in con.execute("SELECT DISTINCT input FROM sentences")}
    finally:
        con.close()


def run_hostile_probes(tmp: Path, data: Path) -> Tuple[int, int]:
    setup_hostile(tmp, data)
    # the indexes item 9 breaks: one good index, then a corrupt and an edited copy
    run(["index", "model", "small", "-o", "good.index"], tmp)
    shutil.copytree(tmp / "good.index", tmp / "corrupt.index")
    (tmp / "corrupt.index" / "sentences.sqlite").write_bytes(b"not a database " * 100)
    shutil.copytree(tmp / "good.index", tmp / "edited.index")
    import json

    config = json.loads((tmp / "edited.index" / "index.json").read_text(encoding="utf8"))
    config.pop("pipeline", None)
    (tmp / "edited.index" / "index.json").write_text(json.dumps(config), encoding="utf8")
    kind = (tmp / "dev" / "kind.txt").read_text(encoding="utf8")
    print(f"Device node of item 1: a {kind}.\n")
    print("| item | probe | command | what the user sees | exit | s | OK |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    n_ok = 0
    probes = hostile_probes(tmp, data) + file_probes(tmp, setup_files(tmp))
    for item, name, argv, expected, check in probes:
        BEFORE.get(name, lambda w: None)(tmp)
        code, seen, seconds, out = run_timed(argv, tmp)
        ok = code == expected and "Traceback" not in out and "PICKLE RAN" not in out and check(tmp)
        n_ok += ok
        shown = " ".join(a if len(a) < 40 else "…/" + Path(a).name for a in argv)
        print(f"| {item} | {name} | `{shown}` | {seen.replace('|', '/')} | {code} | {seconds:.1f} | "
              f"{'OK' if ok else 'NOT OK'} |")
    a, b = align_sentences(tmp)
    print(f"| 10 | align and convert text split one text alike | (library) `alignment.read_paper` vs "
          f"`readers.papers.read_paper` on 'Smith et al. (2020) … (see Fig. 2 …) …' | {a} vs {b} sentences | – "
          f"| – | {'OK' if a == b == 3 else 'NOT OK'} |")
    n_ok += a == b == 3
    n_ok += print_interrupt_probes(tmp)
    read_ok, n_read = run_reading_probes(tmp)
    n_ok += read_ok
    print(f"\n{n_ok} of {len(probes) + 3 + n_read} probes OK.")
    return n_ok, len(probes) + 3 + n_read


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


JOB_ITEMS = ("FIFO", "links", "unreadable", "workers")


def run_job_probes(tmp: Path, data: Path) -> None:
    """Only the hostile probes of the corpus jobs (``--only-jobs``): inputs
    that could block or stop a run, --workers, interrupts."""
    make_model(tmp / "model")
    shutil.copytree(tmp / "model", tmp / "pc")
    (tmp / "p.tei.xml").write_text(TEI.format(title="A paper", body=GOOD_TEXT), encoding="utf8")
    (tmp / "small").mkdir()
    for i in range(3):
        (tmp / "small" / f"p{i}.txt").write_text(f"We propose method {i}. It works on data {i}. Results are good.\n",
                                                 encoding="utf8")
    setup_blocking_inputs(tmp)
    print("| item | probe | command | what the user sees | exit | s | OK |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    probes = [p for p in hostile_probes(tmp, data) if p[0] in JOB_ITEMS]
    n_ok = 0
    for item, name, argv, expected, check in probes:
        code, seen, seconds, out = run_timed(argv, tmp)
        ok = code == expected and "Traceback" not in out and check(tmp)
        n_ok += ok
        print(f"| {item} | {name} | `{' '.join(argv)}` | {seen.replace('|', '/')} | {code} | {seconds:.1f} | "
              f"{'OK' if ok else 'NOT OK'} |")
    n_ok += print_interrupt_probes(tmp)
    print(f"\n{n_ok} of {len(probes) + 2} probes OK.")


# -- reading and showing: model folders with code, escape sequences, runaway rules, tampered pipelines,
# -- Chinese text, text that begins with "<", long PDF names through GROBID, files that are not papers

ESCAPES = "We propose \x1b]0;pwned\x07\x1b[2J a method. It works."
ZH_PAPER = "标题\n\n摘要\n\n本文提出了一种新方法。结果很好。\n\n1 引言\n\n近年来进展很大。"
TEI_ANSWER = ('<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>T</title>'
              '</titleStmt></fileDesc></teiHeader><text><body><div><head>Introduction</head>'
              '<p>We propose a method. It works.</p></div></body></text></TEI>').encode()


def make_tagged_model(path: Path, patterns: List[str]) -> None:
    """make_model's pipeline with a section tagger whose rules start with ``patterns``."""
    import json

    import spacy

    import spacy_rhetoric  # noqa: F401

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_section_tagger")
    clf = nlp.add_pipe("rhetoric_function_classifier")
    for label in ("background", "objective", "result"):
        clf.add_label(label)
    nlp.initialize()
    nlp.to_disk(path)
    rules = path / "rhetoric_section_tagger" / "rules.json"
    data = json.loads(rules.read_text(encoding="utf8"))
    data["rules"] = [{"category": "method", "pattern": p} for p in patterns] + data["rules"]
    rules.write_text(json.dumps(data), encoding="utf8")


def tampered_model(w: Path, name: str, old: str, new: str) -> None:
    shutil.copytree(w / "model", w / name)
    config = (w / name / "config.cfg").read_text(encoding="utf8")
    (w / name / "config.cfg").write_text(config.replace(old, new, 1), encoding="utf8")


def setup_reading(w: Path) -> None:
    """The scratch files of the reading probes (READ_ITEMS)."""
    import json

    evil = w / "evil_model"
    evil.mkdir()
    auto_map = {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel",
                "AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}
    (evil / "config.json").write_text(json.dumps({"auto_map": auto_map}), encoding="utf8")
    for name in ("configuration_evil", "modeling_evil", "tokenization_evil"):
        (evil / f"{name}.py").write_text(f"open({str(w / 'CODE_RAN')!r}, 'w').write('ran')\n", encoding="utf8")
    (w / "esc_in").mkdir()
    (w / "esc_in" / "esc.txt").write_text(ESCAPES + "\n", encoding="utf8")
    run(["index", "model", "esc_in", "-o", "esc.index"], w)
    make_tagged_model(w / "rules_slow", [r"^(a|aa)+$"])
    make_tagged_model(w / "rules_nested", [r"^(a+)+$"])
    (w / "aaa.txt").write_text("1 A" + "a" * 60 + "b\n\nWe propose a method. It works.\n", encoding="utf8")
    width = next(line for line in (w / "model" / "config.cfg").read_text().splitlines() if line.startswith("width"))
    tampered_model(w, "wide_model", width, "width = 1000000000000")
    tampered_model(w, "lang_model", 'lang = "en"', 'lang = "../../etc/x"')
    (w / "zh.txt").write_text(ZH_PAPER, encoding="utf8")
    (w / "bold_in").mkdir()
    (w / "bold_in" / "bold.txt").write_text("<b>Bold</b> claims. We propose a method.", encoding="utf8")
    (w / "bold.xml").write_text("<b>Bold</b> claims. We propose a method.", encoding="utf8")
    (w / "longname").mkdir()
    (w / "longname" / ("p" * 250 + ".pdf")).write_bytes(b"%PDF-1.4\n%stand-in\n")
    mixed = w / "mixed"
    mixed.mkdir()
    (mixed / "paper.txt").write_text(GOOD_TEXT + "\n", encoding="utf8")
    (mixed / "README.md").write_text("# Corpus\n\nThese are the papers of our study.\n", encoding="utf8")
    (mixed / "LICENSE").write_text("Permission is hereby granted, free of charge.\n", encoding="utf8")
    (mixed / "scores.csv").write_text("paper,score\npaper.txt,0.5\nother.txt,0.7\n", encoding="utf8")
    (mixed / "figure.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)


def no_escapes(out: str) -> bool:
    return not any(seq in out for seq in ("\x1b]0;", "\x07", "\x1b[2J"))


def zh_sentences(w: Path) -> bool:
    import spacy
    from spacy.tokens import DocBin

    if not (w / "zh.spacy").exists():
        return False
    doc = next(DocBin(store_user_data=True).from_disk(w / "zh.spacy").get_docs(spacy.blank("en").vocab))
    return [s.text for s in doc.sents] == ["标题", "本文提出了一种新方法。", "结果很好。", "近年来进展很大。"]


class _TeiServer:
    """A stand-in GROBID server in a thread that answers every POST with TEI_ANSWER."""

    def __init__(self):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(TEI_ANSWER)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"


READ_ITEMS = ("code", "terminal", "rules", "pipeline", "CJK", "sniffing", "names", "not papers")


def reading_probes(tmp: Path) -> List[Tuple[str, str, List[str], int, Check, Callable[[str], bool]]]:
    """(item, probe, argv, expected exit code, check of the files, check of the output)."""
    grobid = _TeiServer()
    any_out: Callable[[str], bool] = lambda out: True  # noqa: E731
    short = lambda out: len([x for x in out.splitlines() if x.strip()]) <= 6  # noqa: E731
    return [
        ("code", "evaluate raw:FOLDER whose config.json has an auto_map (stdin: y)",
         ["evaluate", "raw:evil_model", "X.spacy"], 1, lambda w: not (w / "CODE_RAN").exists(), short),
        ("terminal", "align: a paper with ESC ]0; BEL ESC [2J", ["align", "esc_in/esc.txt", "esc_in/esc.txt", "-m",
                                                                   "model"], 0, lambda w: True, no_escapes),
        ("terminal", "search: the same sentence in the table", ["search", "esc.index", "We propose a method."], 0,
         lambda w: True, no_escapes),
        ("rules", "render: a rules.json rule ^(a|aa)+$ and a 62-letter heading",
         ["render", "aaa.txt", "-m", "rules_slow", "-o", "rules_slow.html"], 1,
         lambda w: not (w / "rules_slow.html").exists(), lambda out: "^(a|aa)+$" in out),
        ("rules", "render: a rules.json rule ^(a+)+$ and a 62-letter heading",
         ["render", "aaa.txt", "-m", "rules_nested", "-o", "rules_nested.html"], 0,
         lambda w: (w / "rules_nested.html").exists(), any_out),
        ("pipeline", "render: a pipeline whose config says width = 10^12",
         ["render", "p.tei.xml", "-m", "wide_model", "-o", "wide.html"], 1, lambda w: True, short),
        ("pipeline", "align: a pipeline whose config says lang = ../../etc/x",
         ["align", "p.tei.xml", "p.tei.xml", "-m", "lang_model"], 1, lambda w: True, short),
        ("CJK", "convert text: a Chinese paper (4 sentences, 2 headings)", ["convert", "text", "zh.txt", "zh.spacy"], 0,
         zh_sentences, any_out),
        ("sniffing", "convert auto: a .txt that begins with <b>", ["convert", "auto", "bold_in", "bold.spacy"], 0,
         lambda w: docbin_count(w / "bold.spacy") == 1, any_out),
        ("sniffing", "render --format text: a .xml that is text", ["render", "bold.xml", "-m", "model", "-o",
                                                                   "bold.html", "--format", "text"], 0,
         lambda w: "We propose a method." in (w / "bold.html").read_text(encoding="utf8")
         if (w / "bold.html").exists() else False, any_out),
        ("names", "convert pdf --grobid: a PDF with a 250-byte stem",
         ["convert", "pdf", "longname", "longname.spacy", "--grobid", grobid.url], 0,
         lambda w: docbin_count(w / "longname.spacy") == 1, any_out),
        ("not papers", "annotate a folder: a paper, README, LICENSE, CSV, PNG",
         ["annotate", "model", "mixed", "-o", "mixed_out"], 0,
         lambda w: summary_of_inputs(w / "mixed_out") == (1, 4), any_out),
        ("not papers", "index the same folder", ["index", "model", "mixed", "-o", "mixed.index"], 0,
         lambda w: _index_inputs(w / "mixed.index") == {"paper.txt"}, any_out),
    ]


def summary_of_inputs(out: Path) -> Tuple[int, int]:
    import json

    path = out / "summary.json"
    summary = json.loads(path.read_text(encoding="utf8")) if path.exists() else {}
    return summary.get("inputs_annotated", -1), summary.get("inputs_skipped", -1)


def run_reading_probes(tmp: Path) -> Tuple[int, int]:
    """The reading rows of the hostile table (setup included); (OK, probes)."""
    setup_reading(tmp)
    n_ok = 0
    probes = reading_probes(tmp)
    for item, name, argv, expected, check, seen_ok in probes:
        code, seen, seconds, out = run_timed(argv, tmp, stdin="y\n")
        ok = code == expected and "Traceback" not in out and check(tmp) and seen_ok(out)
        n_ok += ok
        shown = " ".join(a if len(a) < 40 else "…/" + Path(a).name[:20] + "…" for a in argv)
        print(f"| {item} | {name} | `{shown}` | {printable_cell(seen)} | {code} | {seconds:.1f} | "
              f"{'OK' if ok else 'NOT OK'} |")
    return n_ok, len(probes)


def printable_cell(text: str) -> str:
    """A table cell: '|' and control characters shown, never obeyed."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", text.replace("|", "/"))


def run_read_only(tmp: Path) -> None:
    """Only the reading probes (``--only-reading``)."""
    make_model(tmp / "model")
    (tmp / "p.tei.xml").write_text(TEI.format(title="A paper", body=GOOD_TEXT), encoding="utf8")
    import spacy
    from spacy.tokens import DocBin

    from spacy_rhetoric.readers.common import doc_from_sentences

    DocBin(docs=[doc_from_sentences(spacy.blank("en"), ["We parse.", "It works."], labels=["objective", "result"])],
           store_user_data=True).to_disk(tmp / "X.spacy")
    print("| item | probe | command | what the user sees | exit | s | OK |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    n_ok, n = run_reading_probes(tmp)
    print(f"\n{n_ok} of {n} probes OK.")


# -- limits: pathological PDFs, a sentence without end, GROBID that never answers ------------------

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


class _Grobid:
    """A stand-in GROBID server in a thread: 'silent' (never answers),
    'drip' (a byte every 5 s), 'huge' (a 50 MB answer)."""

    def __init__(self):
        import http.server
        import threading

        stop = self.stop = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                mode = self.path.split("/")[1]
                try:
                    if mode == "silent":
                        stop.wait(600)
                        return
                    self.send_response(200)
                    self.end_headers()
                    for _ in range(120 if mode == "drip" else 50):
                        if mode == "drip" and stop.wait(5):
                            return
                        self.wfile.write(b"<" if mode == "drip" else b"<" * (1 << 20))
                        self.wfile.flush()
                except OSError:
                    pass

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


def write_report(path: Optional[Path], **summaries: Tuple[int, int]) -> None:
    """``--report``: each table's probes and how many are OK, as JSON."""
    if path is None:
        return
    import json
    import time

    out = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv)}
    for name, (ok, total) in summaries.items():
        out[name] = {"probes": total, "ok": ok, "all_ok": ok == total}
    path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    parser.add_argument("--only-hostile", action="store_true", help="Only the hostile probes")
    parser.add_argument("--only-reading", action="store_true", help="Only the reading probes: model folders with "
                        "code, escape sequences, runaway rules, tampered pipelines, CJK, '<' text, long names, "
                        "files that are not papers")
    parser.add_argument("--only-limits", action="store_true", help="Only the limits: pathological PDFs, a 1 MB "
                        "sentence, GROBID that never answers (time and peak memory)")
    parser.add_argument("--only-jobs", action="store_true", help="Only the hostile probes of the corpus jobs: "
                        "FIFOs, sockets, link loops and unreadable files among the inputs, --workers, interrupts")
    parser.add_argument("--report", type=Path, default=None, help="Write each table's probes and OK count as JSON")
    args = parser.parse_args()
    data = args.data.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bad-input-"))
    if args.only_reading:
        run_read_only(tmp)
        return
    if args.only_jobs:
        run_job_probes(tmp, data)
        return
    if args.only_limits:
        write_report(args.report, limits=run_limit_probes(tmp))
        return
    if args.only_hostile:
        make_model(tmp / "model")
        write_report(args.report, hostile=run_hostile_probes(tmp, data))
        return
    (tmp / "a.jsonl").write_text(ABSTRACT % 1 + ABSTRACT % 2, encoding="utf8")
    (tmp / "empty.jsonl").write_text("", encoding="utf8")
    (tmp / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
    (tmp / "paper.txt").write_text("We study parsing. We propose a method. Results improve.\n", encoding="utf8")
    (tmp / "indir").mkdir()
    (tmp / "indir" / "p.txt").write_text("We propose a method.\n", encoding="utf8")
    (tmp / "kv.bin").write_bytes(b"\x80\x04not vectors")
    pmc = sorted((data / "pmc-sents-full").rglob("*.jsonl"))
    run(["convert", "csabstruct", "a.jsonl", "a.spacy"], tmp)
    make_model(tmp / "model")
    unwritable = "/proc/spacy-rhetoric-probe/out"
    probes = [
        ("convert of an empty file", ["convert", "csabstruct", "empty.jsonl", "o.spacy"]),
        ("convert of a binary file", ["convert", "csabstruct", "binary.jsonl", "o.spacy"]),
        ("convert of a PMC file with the csabstruct reader",
         ["convert", "csabstruct", str(pmc[0]) if pmc else "missing.jsonl", "o.spacy", "--limit", "50"]),
        ("convert with output = input", ["convert", "csabstruct", "a.jsonl", "a.jsonl"]),
        ("convert of a missing input", ["convert", "csabstruct", "nope.jsonl", "o.spacy"]),
        ("convert of a directory", ["convert", "csabstruct", "indir", "o.spacy"]),
        ("convert to an unwritable path", ["convert", "csabstruct", "a.jsonl", unwritable + ".spacy"]),
        ("split with train = test", ["split", "a.spacy", "tr.spacy", "tr.spacy"]),
        ("split with train = input", ["split", "a.spacy", "a.spacy", "te.spacy"]),
        ("label with no usable input", ["label", "empty.jsonl", "-o", "lab"]),
        ("label --n-process 0", ["label", "indir", "-o", "lab", "--n-process", "0"]),
        ("label --batch-size 0", ["label", "indir", "-o", "lab", "--batch-size", "0"]),
        ("evaluate on an empty set", ["evaluate", "model", "empty.spacy"]),
        ("evaluate --tsne to an unwritable path", ["evaluate", "model", "a.spacy", "--tsne", unwritable + ".png"]),
        ("evaluate --label-field unknown", ["evaluate", "model", "a.spacy", "--label-field", "nope"]),
        ("align -k 0", ["align", "paper.txt", "paper.txt", "-m", "model", "-k", "0"]),
        ("link -k 0", ["link", "paper.txt", "paper.txt", "-k", "0"]),
        ("link --vectors not a vectors file", ["link", "paper.txt", "paper.txt", "--vectors", "kv.bin"]),
        ("link --evaluate --topics unknown",
         ["link", "--evaluate", str(data / "cl-scisumm" / "training-40-manual"), "--topics", "NOPE-1"]),
    ]
    from spacy.tokens import DocBin

    DocBin().to_disk(tmp / "empty.spacy")
    print("| probe | what the user sees | exit |")
    print("| --- | --- | --- |")
    for name, argv in probes:
        code, seen = run(argv, tmp)
        print(f"| {name} (`{' '.join(argv[:1])}`) | {seen.replace('|', '/')} | {code} |")
    print("\n### Hostile probes\n")
    hostile = run_hostile_probes(tmp, data)
    print("\n### Limits\n")
    write_report(args.report, hostile=hostile, limits=run_limit_probes(tmp))


if __name__ == "__main__":
    main()
