"""No traceback for a user's mistake, with the files themselves: a file name
that is not UTF-8, a full disk, two runs on one output, a damaged index
store, UTF-16/32 text, lone-CR line ends, temporary files of a killed run.
Each test fails on the code before its fix. Tiny inline files in tmp dirs, a
tiny untrained pipeline, offline."""
import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
import spacy
from helpers import cli_text, save_tiny_pipeline
from spacy.tokens import DocBin
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
import spacy_rhetoric.cli.annotate  # noqa: F401  registers the commands
import spacy_rhetoric.cli.convert  # noqa: F401
import spacy_rhetoric.cli.index  # noqa: F401
import spacy_rhetoric.cli.search  # noqa: F401
from spacy_rhetoric import extensions as ext
from spacy_rhetoric.cli import app

PAPER = "# A title\n\nAbstract\n\nWe study parsing.\n\n1 Introduction\n\nParsing matters. We propose a method.\n"
LATIN1_NAME = os.fsdecode(b"caf\xe9_latin1.txt")  # not UTF-8: a lone surrogate in Python


def run(*args):
    """(exit code, output) of the CLI; never a traceback or an uncaught error."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    text = cli_text(result)
    assert "Traceback" not in text, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{result.exception!r}: {result.output}"
    return result.exit_code, text


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_pipeline(tmp_path_factory.mktemp("files_model") / "pipeline")


def papers(folder, n=2):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"p{i}.txt").write_text(f"We propose method {i}. It works on data {i}.\n", encoding="utf8")
    return folder


def docbin_ids(path):
    docs = DocBin(store_user_data=True).from_disk(path).get_docs(spacy.blank("en").vocab)
    return sorted(ext.get_doc_value(doc, ext.DOC_ID) for doc in docs)


# -- a file name that is not UTF-8 beside good files ----------------------------------------------


def test_a_file_name_that_is_not_utf8_is_read_like_any_other(model_dir, tmp_path):
    src = papers(tmp_path / "src", 1)
    (src / LATIN1_NAME).write_text("We study parsing. Results are good.\n", encoding="utf8")
    code, text = run("annotate", model_dir, src, "-o", tmp_path / "ann")
    assert code == 0, text
    rows = [json.loads(line) for line in (tmp_path / "ann" / "annotations.jsonl").read_text("utf8").splitlines()]
    assert {r["paper_id"] for r in rows} == {"caf\\xe9_latin1", "p0"}
    assert {r["input"] for r in rows} == {"caf\\xe9_latin1.txt", "p0.txt"}
    code, text = run("annotate", model_dir, src, "-o", tmp_path / "ann")  # resumes by the same keys
    assert code == 0 and json.loads((tmp_path / "ann" / "summary.json").read_text("utf8"))["inputs_resumed"] == 2
    code, text = run("convert", "auto", src, tmp_path / "c.spacy")
    assert code == 0 and docbin_ids(tmp_path / "c.spacy") == ["caf\\xe9_latin1", "p0"]
    code, text = run("index", model_dir, src, "-o", tmp_path / "i.index")
    assert code == 0 and not (tmp_path / "i.index.tmp-dir").exists()
    con = sqlite3.connect(tmp_path / "i.index" / "sentences.sqlite")
    assert {r[0] for r in con.execute("SELECT DISTINCT input FROM sentences")} == {"caf\\xe9_latin1.txt", "p0.txt"}
    con.close()


# -- UTF-16 / UTF-32 with a byte-order mark; lone-CR line ends -----------------------------------


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be-bom", "utf-32", "utf-8-sig", "cr", "crlf"])
def test_text_in_any_unicode_encoding_and_line_end(tmp_path, encoding):
    from spacy_rhetoric.readers.papers import detect_format, read_paper

    if encoding == "utf-16-be-bom":
        data = b"\xfe\xff" + PAPER.encode("utf-16-be")
    elif encoding in ("cr", "crlf"):
        data = PAPER.replace("\n", "\r" if encoding == "cr" else "\r\n").encode("utf8")
    else:
        data = PAPER.encode(encoding)
    path = tmp_path / "paper.txt"
    path.write_bytes(data)
    assert detect_format(path) == "text"
    for fmt in ("auto", "text"):
        doc = read_paper(path, spacy.blank("en"), fmt=fmt)
        assert ext.get_doc_value(doc, ext.TITLE) == "A title"
        assert [(s.text, ext.get_span_value(s, ext.HEADING)) for s in doc.sents] == [
            ("We study parsing.", "Abstract"), ("Parsing matters.", "1 Introduction"),
            ("We propose a method.", "1 Introduction")]
    code, text = run("convert", "text", path, tmp_path / "o.spacy")
    assert code == 0 and "Docs written: 1 (3 sentences)" in text


def test_utf16_xml_is_detected_and_a_binary_file_still_refused(tmp_path):
    from spacy_rhetoric.readers.common import ReaderError
    from spacy_rhetoric.readers.papers import detect_format, read_paper

    tei = ('<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>T</title></titleStmt>'
           '</fileDesc></teiHeader><text><body><div><head>Intro</head><p>We parse. It works.</p></div></body>'
           '</text></TEI>')
    path = tmp_path / "p.xml"
    path.write_bytes(tei.encode("utf-16"))
    assert detect_format(path) == "tei"
    assert len(list(read_paper(path, spacy.blank("en")).sents)) == 2
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00\x00" + b"\x00" * 64)  # a UTF-32 mark, then NUL characters
    with pytest.raises(ReaderError, match="binary file"):
        read_paper(binary, spacy.blank("en"), fmt="text")


# -- a full disk --------------------------------------------------------------------------------


def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_is_one_line_naming_the_file(model_dir, tmp_path, monkeypatch):
    import spacy_rhetoric.io as io_mod
    import spacy_rhetoric.search.index as index_mod

    src = papers(tmp_path / "src")
    out = tmp_path / "o.spacy"
    with monkeypatch.context() as m:
        m.setattr(DocBin, "to_disk", enospc)
        code, text = run("convert", "text", src, out)
    assert code == 1 and f"no space left on device writing {out}" in text
    assert not out.exists() and not list(tmp_path.glob(".tmp-*"))

    fsync = os.fsync

    def full_for_annotations(fd):
        if "annotations.jsonl" in os.readlink(f"/proc/self/fd/{fd}"):
            enospc()
        fsync(fd)

    ann = tmp_path / "ann"
    with monkeypatch.context() as m:
        m.setattr(io_mod.os, "fsync", full_for_annotations)
        code, text = run("annotate", model_dir, src, "-o", ann)
    assert code == 1 and f"no space left on device writing {ann / 'annotations.jsonl'}" in text
    assert not list(ann.glob(".tmp-*")) and not (ann / "annotations.jsonl").exists()
    code, text = run("annotate", model_dir, src, "-o", ann)  # resumes once there is space
    assert code == 0 and json.loads((ann / "summary.json").read_text("utf8"))["inputs_resumed"] == 2

    idx = tmp_path / "i.index"

    def store_full(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as m:
        m.setattr(index_mod, "add_part", store_full)
        code, text = run("index", model_dir, src, "-o", idx)
    assert code == 1 and "no space left on device writing" in text and "sentences.sqlite" in text
    with monkeypatch.context() as m:
        m.setattr(index_mod.numpy, "save", enospc)
        code, text = run("index", model_dir, src, "-o", idx)
    assert code == 1 and "no space left on device writing" in text and "part-000000.npy" in text
    code, text = run("index", model_dir, src, "-o", idx)
    assert code == 0 and (idx / "index.faiss").exists()


# -- two runs on one output -----------------------------------------------------------------------


def test_a_second_run_on_the_same_output_stops_at_once(model_dir, tmp_path, monkeypatch):
    import spacy_rhetoric.search.index as index_mod
    from spacy_rhetoric.apps.annotate import annotate_corpus
    from spacy_rhetoric.io import OutputLockedError

    src = papers(tmp_path / "src", 4)
    idx = tmp_path / "i.index"
    encode, seen = index_mod.encode_papers, []

    def encode_while_another_run_starts(nlp, parts, **kwargs):
        if not seen:  # the first part of the first run: a second run on the same index
            with pytest.raises(OutputLockedError, match="another run") as err:
                index_mod.build_index(model_dir, [src], idx, index_type="flat", part_sentences=2, progress=False)
            seen.append(str(err.value))
        return encode(nlp, parts, **kwargs)

    monkeypatch.setattr(index_mod, "encode_papers", encode_while_another_run_starts)
    code, text = run("index", model_dir, src, "-o", idx, "--part-sentences", "2")
    assert code == 0 and seen and f"pid {os.getpid()}" in seen[0]
    assert not list(tmp_path.glob("*.lock")) and not list(tmp_path.glob(".*.lock"))

    def annotate_again(inp, header):
        if len(seen) == 1:
            seen.append(inp)
            with pytest.raises(OutputLockedError, match="another run"):
                annotate_corpus(model_dir, [src], tmp_path / "ann")

    summary = annotate_corpus(model_dir, [src], tmp_path / "ann", on_shard=annotate_again)
    assert len(seen) == 2 and summary["inputs_annotated"] == 4 and not (tmp_path / "ann" / ".lock").exists()
    code, text = run("annotate", model_dir, src, "-o", tmp_path / "ann")  # the lock went with the run
    assert code == 0


# -- a damaged index store -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_index(model_dir, tmp_path_factory):
    from spacy_rhetoric.search import build_index

    root = tmp_path_factory.mktemp("files_index")
    build_index(model_dir, [papers(root / "src", 3)], root / "idx", index_type="flat", progress=False)
    return root / "idx"


@pytest.mark.parametrize("damage,seen", [
    ("ALTER TABLE sentences ADD COLUMN extra TEXT", "unknown column 'extra'"),
    ("ALTER TABLE sentences DROP COLUMN heading", "column 'heading' is missing"),
    ("UPDATE sentences SET scores = '{not json'", "scores is not JSON"),
    ("UPDATE sentences SET scores = '[1, 2]'", "scores is not an object"),
    ("UPDATE sentences SET text = X'00ff10'", "text is bytes, not text"),
    ("UPDATE sentences SET text = CAST(X'ff41fe' AS TEXT)", "cannot be read"),
    ("UPDATE sentences SET id = id + 100", "ids 100 to 105"),
    ("DELETE FROM sentences WHERE id = 2", "has 5 sentences"),
])
def test_search_on_a_damaged_store_is_one_line(small_index, tmp_path, damage, seen):
    idx = tmp_path / "idx"
    shutil.copytree(small_index, idx)
    con = sqlite3.connect(idx / "sentences.sqlite")
    with con:
        con.execute(damage)
    con.close()
    code, text = run("search", idx, "We propose a method.", "-k", "6")
    assert code == 1 and "not a valid spacy-rhetoric index" in text and seen in text


def test_a_damaged_unfinished_build_is_refused_then_discarded_by_overwrite(model_dir, tmp_path):
    from spacy_rhetoric.search import SearchIndexError, build_index

    src = papers(tmp_path / "src", 4)
    idx = tmp_path / "idx"
    work = tmp_path / "idx.tmp-dir"
    for damage in ("column", "part"):
        shutil.rmtree(work, ignore_errors=True)
        assert not build_index(model_dir, [src], idx, part_sentences=2, stop_after_parts=1, progress=False)["finished"]
        if damage == "column":
            con = sqlite3.connect(work / "sentences.sqlite")
            con.execute("ALTER TABLE sentences DROP COLUMN heading")
            con.close()
        else:
            (work / "vectors" / "part-000000.npy").unlink()
        with pytest.raises(SearchIndexError, match="damaged unfinished build .* --overwrite"):
            build_index(model_dir, [src], idx, part_sentences=2, progress=False)
        summary = build_index(model_dir, [src], idx, part_sentences=2, progress=False, overwrite=True)
        assert summary["finished"] and not summary["resumed"] and summary["n"] == 8


# -- temporary files of a killed run ----------------------------------------------------------------


def dead_pid():
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_temporary_files_of_dead_runs_are_removed(model_dir, tmp_path):
    src = papers(tmp_path / "src")
    ann = tmp_path / "ann"
    assert run("annotate", model_dir, src, "-o", ann)[0] == 0
    dead, alive = dead_pid(), os.getppid()
    stale = [ann / f".tmp-annotations.jsonl.{dead}", tmp_path / f".tmp-o.spacy.{dead}"]
    kept = [ann / f".tmp-annotations.jsonl.{alive}", tmp_path / f".tmp-o.spacy.{alive}"]
    for path in stale + kept:
        path.write_text("half written\n", encoding="utf8")
    (tmp_path / f".old-i.index.{dead}").mkdir()
    (tmp_path / f".old-i.index.{dead}" / "index.faiss").write_bytes(b"old")
    assert run("annotate", model_dir, src, "-o", ann)[0] == 0
    assert run("convert", "text", src, tmp_path / "o.spacy")[0] == 0
    assert run("index", model_dir, src, "-o", tmp_path / "i.index")[0] == 0
    assert not any(p.exists() for p in stale) and not (tmp_path / f".old-i.index.{dead}").exists()
    assert all(p.exists() for p in kept)
