"""The hostile probes of ``bad_input.py`` (``--only-hostile``): a hostile but
ordinary user -- special output files, same-named papers, outputs inside the
pipeline, a 1.2M-character paper, deeply nested XML, entity declarations, bad
link inputs, huge --n-process, corrupt indexes, pickles --, then in the same
table the file probes (``bad_input_files.py``), the corpus jobs'
(``bad_input_jobs.py``: FIFOs and sockets among the inputs, symbolic-link
loops, unreadable files, --workers 64, SIGINT and SIGTERM in the middle of a
run) and the reading probes (``bad_input_reading.py``). Each row: its command,
what the user sees, the exit code, the wall time and whether it is OK: the
expected exit code, no traceback, and the check that says no input or special
file was touched (or that the result is right).
"""
import os
import shutil
import stat
from pathlib import Path
from typing import List, Tuple

from bad_input_common import GOOD_TEXT, TEI, Check, docbin_count, index_inputs, jsonl_ids, run, run_timed
from bad_input_files import BEFORE, file_probes, setup_files
from bad_input_jobs import job_probes, print_interrupt_probes, setup_blocking_inputs
from bad_input_reading import run_reading_probes

JATS = ('<article><front><article-meta><title-group><article-title>T</article-title></title-group>'
        '</article-meta></front><body><sec><title>Intro</title><p>{}</p></sec></body></article>')


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


def align_sentences(tmp: Path) -> Tuple[int, int]:
    """Sentences of abbrev.txt as align reads it and as convert text reads it."""
    import spacy

    from spacy_rhetoric.apps.alignment import read_paper as align_read
    from spacy_rhetoric.readers.papers import read_paper

    nlp = spacy.load(tmp / "model")
    a = len(list(align_read(tmp / "abbrev.txt", nlp).sents))
    b = len(list(read_paper(tmp / "abbrev.txt", spacy.blank("en"), fmt="text").sents))
    return a, b


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
         lambda w: index_inputs(w / "same.index") == {"a/paper.xml", "b/paper.xml"}),
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
    ] + job_probes()


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
