"""Issue 24: nothing overwritten, nothing merged, one bad paper never stops a
batch. One test (or a few) per item of the issue; each fails on the code
before the fix. Tiny inline files in tmp dirs, a tiny untrained pipeline."""
import json
import os
import stat

import pytest
import spacy
from helpers import cli_text, save_tiny_pipeline
from spacy.tokens import DocBin
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
import spacy_rhetoric.cli.annotate  # noqa: F401  registers the commands
import spacy_rhetoric.cli.convert  # noqa: F401
import spacy_rhetoric.cli.evaluate  # noqa: F401
import spacy_rhetoric.cli.render  # noqa: F401
from spacy_rhetoric.cli import app
from spacy_rhetoric.io import PathError, atomic_write_text, check_output
from spacy_rhetoric.readers.common import doc_from_sentences

PAPER = ("# A note\n\n## Introduction\n\nParsing is an important step. We aim to parse long sentences.\n\n"
         "## Results\n\nOur results show a gain of four points.\n")
TEI = ('<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>T</title>'
       '</titleStmt></fileDesc></teiHeader><text><body><div><head>Intro</head><p>{}</p></div></body></text></TEI>')


def run(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    text = cli_text(result)
    assert "Traceback" not in text, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), \
        f"{result.exception!r}: {result.output}"
    return result.exit_code, text


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """blank + sentencizer + classifier + encoder, initialized with labels."""
    return save_tiny_pipeline(tmp_path_factory.mktemp("reliability_model") / "pipeline")


def special_file(path):
    """A character device like /dev/null where permitted (root), else a FIFO."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        os.mkfifo(path)
    return path


def is_special(path):
    mode = os.lstat(path).st_mode
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


# -- 1. a writer never replaces a special file ---------------------------------------------------


def test_convert_refuses_a_device_or_fifo_output(tmp_path):
    src = tmp_path / "p.txt"
    src.write_text(PAPER, encoding="utf8")
    node = special_file(tmp_path / "mynull")
    code, text = run("convert", "text", src, node)
    assert code == 1 and "not a regular file" in text
    assert is_special(node)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, text = run("convert", "text", src, fifo)
    assert code == 1 and "FIFO" in text and is_special(fifo)


def test_atomic_writers_never_replace_a_special_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PathError, match="FIFO"):
        atomic_write_text(fifo, "x")
    with pytest.raises(PathError, match="FIFO"):
        check_output(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    with pytest.raises(PathError, match="FIFO"):
        check_output(link)
    assert is_special(fifo) and not list(tmp_path.glob(".tmp-*"))


# -- 3. the pipeline (or any input folder) being read is never written into --------------------


def test_outputs_inside_a_pipeline_are_refused(model_dir, tmp_path):
    from spacy_rhetoric.apps.annotate import annotate_corpus

    before = {p: p.read_bytes() for p in model_dir.rglob("*") if p.is_file()}
    paper = tmp_path / "p.txt"
    paper.write_text(PAPER, encoding="utf8")
    code, text = run("render", paper, "-m", model_dir, "-o", model_dir / "config.cfg")
    assert code == 1 and "inside the input" in text
    gold = tmp_path / "gold.spacy"
    nlp = spacy.blank("en")
    DocBin(docs=[doc_from_sentences(nlp, ["We parse.", "It works."], labels=["objective", "result"])],
           store_user_data=True).to_disk(gold)
    code, text = run("evaluate", model_dir, gold, "-o", model_dir / "meta.json")
    assert code == 1 and "inside the input" in text
    with pytest.raises(PathError, match="inside the input"):
        annotate_corpus(model_dir, [paper], model_dir / "vocab")
    from spacy_rhetoric.search import build_index

    with pytest.raises(PathError, match="inside the input"):
        build_index(model_dir, [paper], model_dir / "idx", progress=False)
    after = {p: p.read_bytes() for p in model_dir.rglob("*") if p.is_file()}
    assert after == before
    spacy.load(model_dir)
    # an output folder inside the corpus folder of annotate stays allowed (never read back)
    src = tmp_path / "src"
    src.mkdir()
    (src / "p.txt").write_text(PAPER, encoding="utf8")
    assert annotate_corpus(model_dir, [src], src / "out")["inputs_annotated"] == 1
    # convert writes nothing into the folder it reads
    code, text = run("convert", "text", src, src / "o.spacy")
    assert code == 1 and "inside the input" in text


# -- 2. papers with one name are never merged --------------------------------------------------


def test_same_named_papers_keep_apart(model_dir, tmp_path):
    import srsly

    from spacy_rhetoric.apps.annotate import annotate_corpus
    from spacy_rhetoric.search import RhetoricIndex, build_index

    src = tmp_path / "same"
    for sub, text in (("a", PAPER), ("b", "We study tagging. Tagging works.\n")):
        (src / sub).mkdir(parents=True)
        (src / sub / "paper.txt").write_text(text, encoding="utf8")
    (src / "X.txt").write_text("One more paper. It is short.\n", encoding="utf8")
    (src / "X.tei.xml").write_text(TEI.format("A TEI paper. With two sentences."), encoding="utf8")
    summary = annotate_corpus(model_dir, [src], tmp_path / "out")
    records = list(srsly.read_jsonl(tmp_path / "out" / "annotations.jsonl"))
    by_id = {}
    for rec in records:
        by_id.setdefault(rec["paper_id"], set()).add(rec["input"])
    assert by_id == {"a/paper": {"a/paper.txt"}, "b/paper": {"b/paper.txt"}, "X.txt": {"X.txt"},
                     "X.tei.xml": {"X.tei.xml"}}
    assert len({(r["paper_id"], r["index"]) for r in records}) == len(records)
    assert summary["papers_kept_apart_by_extension"] == 2
    # convert: one Doc per paper, ids unique
    out = tmp_path / "c.spacy"
    code, text = run("convert", "auto", src, out)
    assert code == 0 and "kept apart" in text
    ids = [d._.rhetoric_doc_id for d in DocBin().from_disk(out).get_docs(spacy.blank("en").vocab)]
    assert sorted(ids) == ["X.tei.xml", "X.txt", "a/paper", "b/paper"]
    # index: every row carries its input file, and --paper finds one paper only
    build_index(model_dir, [src], tmp_path / "idx", index_type="flat", progress=False)
    index = RhetoricIndex.load(tmp_path / "idx")
    hits = index.search("We study tagging.", k=50, paper="b/paper")
    assert hits and {h.input for h in hits} == {"b/paper.txt"}
    assert {index.record(i).input for i in range(len(index))} == {"a/paper.txt", "b/paper.txt", "X.txt", "X.tei.xml"}


# -- 4. a paper longer than nlp.max_length never stops a batch ---------------------------------


def test_long_paper_is_read_and_annotated_with_the_others(model_dir, tmp_path, monkeypatch):
    from spacy_rhetoric.apps import annotate
    from spacy_rhetoric.readers.label_inputs import read_input
    from spacy_rhetoric.readers.papers import read_papers

    src = tmp_path / "big"
    src.mkdir()
    (src / "good.tei.xml").write_text(TEI.format("A good paper. It is short."), encoding="utf8")
    long_text = "We parse long sentences well. " * 200 + "x" * 900  # 6,900 characters
    (src / "long.txt").write_text(long_text, encoding="utf8")
    nlp = spacy.blank("en")
    nlp.max_length = 1000
    docs = list(read_papers(src, nlp))
    assert [len(d.text) for d in docs][1] == len(long_text)
    assert docs[1].text == long_text and len(list(docs[1].sents)) == 201
    load = annotate.load_pipeline

    def small_max_length(*args, **kwargs):
        nlp = load(*args, **kwargs)
        nlp.max_length = 1000
        return nlp

    monkeypatch.setattr(annotate, "load_pipeline", small_max_length)
    summary = annotate.annotate_corpus(model_dir, [src], tmp_path / "out")
    assert summary["inputs_annotated"] == 2 and summary["sentences"] == 2 + 201
    import srsly

    records = [r for r in srsly.read_jsonl(tmp_path / "out" / "annotations.jsonl") if r["paper_id"] == "long"]
    assert [r["index"] for r in records] == list(range(201))  # annotated in pieces, joined
    assert all(long_text[r["start_char"]:r["end_char"]] == r["text"] and r["label"] for r in records)
    # label: a line too long to be a sentence is skipped and counted, the others kept
    txt = tmp_path / "lines.txt"
    txt.write_text("We propose a method.\n" + "y " * 6000 + "\nIt works.\n", encoding="utf8")
    result = read_input(txt)
    assert [s["text"] for s in result.sentences] == ["We propose a method.", "It works."]
    assert result.n_bad_records == 1 and "11,999 characters" in result.bad_records[0]


# -- 5 and 6. deeply nested XML and entity declarations in any encoding ------------------------

JATS = ('<article><front><article-meta><title-group><article-title>T</article-title></title-group>'
        '</article-meta></front><body><sec><title>Intro</title><p>{}</p></sec></body></article>')
BOMB = ('<?xml version="1.0"?>\n<!DOCTYPE PAPER [<!ENTITY a "{}"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n'
        '<PAPER><S sid="0">Title</S><ABSTRACT><S sid="1">&b;&b;&b;</S></ABSTRACT></PAPER>').format("x" * 100)


def nested(tag, depth, text="Deep text here."):
    return f"<{tag}>" * depth + text + f"</{tag}>" * depth


def test_deep_xml_is_skipped_and_counted(tmp_path):
    from spacy_rhetoric.readers.clscisumm import read_reference_xml
    from spacy_rhetoric.readers.common import ReaderError

    src = tmp_path / "in"
    src.mkdir()
    (src / "inl1000.nxml").write_text(JATS.format(nested("italic", 1000)), encoding="utf8")
    (src / "hi1000.tei.xml").write_text(TEI.format(nested("hi", 1000)), encoding="utf8")
    (src / "ok.tei.xml").write_text(TEI.format(nested("hi", 150, "A fine paper. It reads.")), encoding="utf8")
    code, text = run("convert", "jats", src / "inl1000.nxml", tmp_path / "o.spacy")
    assert code == 1 and "inl1000.nxml" in text and "nested more than" in text
    code, text = run("convert", "auto", src, tmp_path / "o.spacy")
    assert code == 0 and "Records skipped: 2" in text and "nested more than" in text
    assert len(list(DocBin().from_disk(tmp_path / "o.spacy").get_docs(spacy.blank("en").vocab))) == 1
    deep = tmp_path / "deep.xml"
    deep.write_text('<PAPER><S sid="0">T</S>' + nested("SECTION", 1000, '<S sid="1">x</S>') + "</PAPER>",
                    encoding="utf8")
    with pytest.raises(ReaderError, match="nested more than"):
        read_reference_xml(deep)


def test_entities_refused_in_utf16_and_clscisumm(tmp_path):
    from spacy_rhetoric.readers.clscisumm import read_reference_xml
    from spacy_rhetoric.readers.common import ReaderError

    tei = ('<?xml version="1.0" encoding="UTF-16"?>\n<!DOCTYPE TEI [<!ENTITY a "' + "y" * 1000 + '">]>\n'
           + TEI.format("&a;&a;&a;&a; A paper."))
    ent16 = tmp_path / "ent16b.tei.xml"
    ent16.write_bytes(tei.encode("utf-16"))
    code, text = run("convert", "tei", ent16, tmp_path / "o.spacy")
    assert code == 1 and "entity" in text and not (tmp_path / "o.spacy").exists()
    bomb = tmp_path / "bomb.xml"
    bomb.write_text(BOMB, encoding="utf8")
    with pytest.raises(ReaderError, match="entit"):
        read_reference_xml(bomb)


# -- 7. link: the same checks for the reference and the citances --------------------------------


@pytest.mark.parametrize("side,content,seen", [
    ("reference", b"", "no sentence in the reference file"),
    ("reference", "Caf\u00e9 na\u00efve.\n".encode("latin-1"), "not UTF-8 text"),
    ("citances", "Caf\u00e9 na\u00efve.\n".encode("latin-1"), "not UTF-8 text"),
    ("citances", bytes(range(256)) * 4, "binary file"),
    ("reference", bytes(range(256)) * 4, "binary file"),
])
def test_link_refuses_unusable_inputs(tmp_path, side, content, seen):
    import spacy_rhetoric.cli.link  # noqa: F401  registers the command

    good = tmp_path / "good.txt"
    good.write_text("We propose a parser.\nIt is fast.\n", encoding="utf8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    ref, cit = (bad, good) if side == "reference" else (good, bad)
    code, text = run("link", ref, cit, "--no-wmd")
    assert code == 1 and seen in text


# -- 8. --n-process is bounded -----------------------------------------------------------------


def test_n_process_bounded_by_cpus_and_inputs(model_dir, tmp_path, monkeypatch, capsys):
    from spacy.language import Language

    from spacy_rhetoric.apps.annotate import AnnotateSettings, annotate_corpus
    from spacy_rhetoric.jobs import bounded_processes

    asked = []
    pipe = Language.pipe

    def recording_pipe(self, *args, n_process=1, **kwargs):
        asked.append(n_process)
        return pipe(self, *args, n_process=1, **kwargs)

    monkeypatch.setattr(Language, "pipe", recording_pipe)
    paper = tmp_path / "p.txt"
    paper.write_text(PAPER, encoding="utf8")
    summary = annotate_corpus(model_dir, [paper], tmp_path / "out", AnnotateSettings(n_process=200))
    assert summary["inputs_annotated"] == 1 and max(asked) == 1
    assert "--n-process 200 is more than this run can use" in capsys.readouterr().out
    assert 1 <= bounded_processes(100_000) <= (os.cpu_count() or 1)
    assert bounded_processes(1, 10) == 1


# -- 9. one-line errors instead of tracebacks --------------------------------------------------


@pytest.fixture(scope="module")
def small_index(model_dir, tmp_path_factory):
    from spacy_rhetoric.search import build_index

    root = tmp_path_factory.mktemp("small_index")
    src = root / "papers"
    src.mkdir()
    for i in range(3):
        (src / f"p{i}.txt").write_text(f"We propose method {i}. It works on data {i}. Results are good.\n",
                                       encoding="utf8")
    build_index(model_dir, [src], root / "idx", index_type="flat", progress=False)
    return root


def test_index_and_search_errors_are_one_line(model_dir, small_index, tmp_path):
    import shutil

    import spacy_rhetoric.cli.index  # noqa: F401  registers the commands
    import spacy_rhetoric.cli.search  # noqa: F401

    corrupt = tmp_path / "corrupt"
    shutil.copytree(small_index / "idx", corrupt)
    (corrupt / "sentences.sqlite").write_bytes(b"garbage, not sqlite" * 10)
    code, text = run("search", corrupt, "We propose a method.")
    assert code == 1 and "sentences.sqlite" in text and "not a spacy-rhetoric metadata store" in text
    edited = tmp_path / "edited"
    shutil.copytree(small_index / "idx", edited)
    config = json.loads((edited / "index.json").read_text(encoding="utf8"))
    del config["pipeline"]
    (edited / "index.json").write_text(json.dumps(config), encoding="utf8")
    code, text = run("search", edited, "We propose a method.")
    assert code == 1 and "'pipeline' is missing" in text
    out = tmp_path / "ivf"
    code, text = run("index", model_dir, small_index / "papers", "-o", out, "--index-type", "IVF4096,PQ8")
    assert code == 1 and "IVF4096,PQ8" in text and "9 vectors" in text
    assert not out.exists() and not (tmp_path / "ivf.tmp-dir").exists()


def test_pickled_loss_file_and_oversized_vectors_header(model_dir, tmp_path):
    import pickle
    import shutil

    import spacy_rhetoric.cli.link  # noqa: F401

    class Boom:
        def __reduce__(self):
            return (print, ("ran",))

    pipeline = tmp_path / "pipeline"
    shutil.copytree(model_dir, pipeline)
    (pipeline / "rhetoric_sentence_encoder" / "loss").write_bytes(pickle.dumps({"x": Boom()}))
    paper = tmp_path / "p.txt"
    paper.write_text(PAPER, encoding="utf8")
    code, text = run("render", paper, "-m", pipeline, "-o", tmp_path / "p.html")
    assert code == 1 and "loss" in text and "not a file of tensors" in text and "ran" not in text
    vectors = tmp_path / "huge.bin"
    vectors.write_bytes(b"100000000 100000\n" + b"\x00" * 64)
    code, text = run("link", paper, paper, "--vectors", vectors)
    assert code == 1 and "declares 100,000,000 words" in text


# -- 10. the smaller ones ----------------------------------------------------------------------


def test_align_splits_plain_text_as_convert_does(model_dir, tmp_path):
    from spacy_rhetoric.apps.alignment import read_paper as align_read
    from spacy_rhetoric.readers.papers import read_paper

    text = tmp_path / "p.txt"
    text.write_text("Smith et al. (2020) propose a parser. It works well (see Fig. 2 for details). "
                    "We agree.\n", encoding="utf8")
    nlp = spacy.load(model_dir)
    aligned = [s.text for s in align_read(text, nlp).sents]
    converted = [s.text for s in read_paper(text, spacy.blank("en"), fmt="text").sents]
    assert aligned == converted and len(aligned) == 3


def test_writers_never_replace_files_they_did_not_write(model_dir, tmp_path):
    from spacy_rhetoric.apps.annotate import AnnotateSettings, annotate_corpus
    from spacy_rhetoric.corpus_builder import CorpusBuildError

    paper = tmp_path / "p.txt"
    paper.write_text(PAPER, encoding="utf8")
    # annotate -o DIR holding somebody's annotations.jsonl / summary.json
    out = tmp_path / "out"
    out.mkdir()
    (out / "annotations.jsonl").write_text("mine\n", encoding="utf8")
    (out / "summary.json").write_text("{}", encoding="utf8")
    with pytest.raises(CorpusBuildError, match="no build wrote"):
        annotate_corpus(model_dir, [paper], out)
    assert (out / "annotations.jsonl").read_text(encoding="utf8") == "mine\n"
    assert annotate_corpus(model_dir, [paper], out, AnnotateSettings(force=True))["inputs_annotated"] == 1
    assert annotate_corpus(model_dir, [paper], out)["inputs_resumed"] == 1  # its own files: fine
    # a single-file output that is not what the command writes: refused without --force
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf8")
    code, text = run("convert", "text", paper, notes)
    assert code == 1 and "--force" in text and notes.read_text(encoding="utf8") == "my notes\n"
    code, text = run("convert", "text", paper, notes, "--force")
    assert code == 0
    code, text = run("convert", "text", paper, tmp_path / "o.spacy")
    assert code == 0
    code, text = run("convert", "text", paper, tmp_path / "o.spacy")  # a rerun over its own output
    assert code == 0


def test_failed_annotate_leaves_no_folder(model_dir, tmp_path):
    from spacy_rhetoric.apps.annotate import annotate_corpus
    from spacy_rhetoric.corpus_builder import CorpusBuildError

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\x00\x01 binary")
    with pytest.raises(CorpusBuildError, match="none of the 1 inputs is usable"):
        annotate_corpus(model_dir, [bad], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_label_with_an_n_no_phrase_reaches(tmp_path):
    from spacy_rhetoric.corpus_builder import BuildSettings, build_corpus

    src = tmp_path / "in.txt"
    src.write_text("In this paper we propose a new method for parsing.\n", encoding="utf8")
    phrases = [("Showing the aim of the paper", "in this paper we propose a new method")]
    with pytest.raises(ValueError, match="no n-gram is left .* use a smaller n"):
        build_corpus([src], tmp_path / "lab", phrases, BuildSettings(n=1000))
    assert not (tmp_path / "lab").exists()


def test_section_encoder_archive_cannot_write_outside(tmp_path):
    import types

    import srsly

    from spacy_rhetoric.pipeline.section_encoder import SectionEncoder

    target = tmp_path / "evil.txt"
    data = srsly.msgpack_dumps({f"../../../../../../..{target}": b"pwned", "cfg": b"{}"})
    fake = types.SimpleNamespace(name="enc", from_disk=lambda *a, **k: None)
    with pytest.raises(ValueError, match="bad file name"):
        SectionEncoder.from_bytes(fake, data)
    assert not target.exists()


# -- 11. project.yml reads $SPACY_RHETORIC_DATA --------------------------------------------------


def test_project_reads_the_data_variable(tmp_path, monkeypatch):
    import shlex
    import shutil
    import subprocess
    import sys

    from weasel.util import load_project_config

    root = __import__("pathlib").Path(__file__).resolve().parent.parent
    clone = tmp_path / "clone"  # no ../shared beside it
    (clone / "scripts").mkdir(parents=True)
    shutil.copy(root / "scripts" / "fetch_assets.py", clone / "scripts")
    mirror = tmp_path / "elsewhere" / "data"
    (mirror / "csabstruct").mkdir(parents=True)
    (mirror / "csabstruct" / "dev.jsonl").write_text("{}\n", encoding="utf8")
    import srsly

    config = srsly.read_yaml(root / "project.yml")  # one small asset instead of the corpora
    config["assets"] = [{"dest": "assets/data/csabstruct/dev.jsonl", "url": "https://example.org/dev.jsonl"}]
    srsly.write_yaml(clone / "project.yml", config)

    def assets_offline():
        config = load_project_config(clone)
        line = next(c for c in config["commands"] if c["name"] == "assets-offline")["script"][0]
        args = shlex.split(line)
        return subprocess.run([sys.executable, *args[1:]], cwd=clone, capture_output=True, text=True)

    monkeypatch.setenv("SPACY_RHETORIC_DATA", str(mirror))
    done = assets_offline()
    assert done.returncode == 0, done.stdout + done.stderr
    assert (clone / "assets" / "data" / "csabstruct" / "dev.jsonl").read_text(encoding="utf8") == "{}\n"
    monkeypatch.delenv("SPACY_RHETORIC_DATA")  # the fallback: ../shared/data, missing here
    (clone / "assets" / "data" / "csabstruct" / "dev.jsonl").unlink()
    done = assets_offline()
    assert done.returncode == 1 and "../shared/data does not exist" in done.stdout + done.stderr


# -- 12. CL-SciSumm citances keyed by what identifies them --------------------------------------


def test_citances_keyed_by_citing_sentence_not_number(tmp_path):
    from spacy_rhetoric.citret.evaluation import key_citances
    from spacy_rhetoric.readers.clscisumm import read_annotations

    def row(number, annotator, offsets, text, gold):
        return (f"Citance Number: {number} | Reference Article:  X.xml | Citing Article:  Y.xml | "
                f"Citation Offset:  {offsets} | Citation Text:  {text} | Reference Offset:  ['{gold}'] | "
                f"Annotator:  {annotator} |")

    x = "We follow the parser of Smith and Jones closely here."
    y = "Unlike their tagger, ours needs no lexicon at all."
    z = "The same corpus was used before by many authors."
    lines = [
        row(5, "A", "['3']", x, 10), row(5, "B", "['7']", y, 11),  # one number, two citing sentences
        row(1, "A", "['9']", z, 12), row(2, "B", "['9']", z, 13),  # one citing sentence, two numbers
        row(6, "A", "['3','4']", x + " It works on long sentences too.", 14),  # A took two sentences
        row(8, "B", "0", "", 15),  # no text, placeholder offsets: cannot be keyed
    ]
    path = tmp_path / "X.ann.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    records, _ = read_annotations(path)
    citances, unkeyed = key_citances(records)
    assert len(unkeyed) == 1
    by_text = {c.text: c for c in citances}
    assert len(citances) == 3 and set(by_text) == {x, y, z}
    assert by_text[x].gold_by_annotator == {"A": ["10", "14"]} and by_text[x].key[2] == "5+6"
    assert by_text[y].gold_by_annotator == {"B": ["11"]} and by_text[y].key[2] == "5"
    assert by_text[z].gold_by_annotator == {"A": ["12"], "B": ["13"]} and by_text[z].key[2] == "1+2"


def test_process_long_doc_keeps_what_the_reader_set(model_dir, tmp_path):
    from spacy_rhetoric import extensions as ext
    from spacy_rhetoric.long_docs import process_long_doc
    from spacy_rhetoric.readers.common import sentence_splitters
    from spacy_rhetoric.readers.papers import read_paper

    body = " ".join(f"We parse sentence {i} of the paper (Smith, 2020)." for i in range(60))
    paper = tmp_path / "p.tei.xml"
    paper.write_text(TEI.format(body), encoding="utf8")
    nlp = spacy.load(model_dir)
    splitters = sentence_splitters(nlp)
    whole = process_long_doc(nlp, read_paper(paper, nlp), disable=splitters)
    pieces = process_long_doc(nlp, read_paper(paper, nlp), max_chars=400, threshold=1000, disable=splitters)
    assert pieces.text == whole.text
    assert [s.text for s in pieces.sents] == [s.text for s in whole.sents] and len(list(pieces.sents)) == 60
    for field in (ext.HEADING, ext.PARAGRAPH):
        assert ext.get_sent_labels(pieces, field=field) == ext.get_sent_labels(whole, field=field)
    assert all(label is not None for label in ext.get_sent_labels(pieces))
    assert ext.get_doc_value(pieces, ext.DOC_ID) == "p" and ext.get_doc_value(pieces, ext.TITLE) == "T"


# -- a sentence without end: the models see bounded sentences --------------------------------------


def test_a_paragraph_without_punctuation_gets_bounded_sentences(model_dir, tmp_path, monkeypatch):
    """A 5,000-word paragraph with no full stop (one 5,000-token sentence,
    where a 1 MB one took 3.5 GB through the demo pipeline) is cut into
    sentences of at most MAX_SENTENCE_TOKENS tokens, at a comma where one is
    near; the Doc's text is the paper's, every sentence is annotated. A paper
    longer than long_docs.LONG_DOC_CHARS (here lowered) is annotated in
    pieces of whole sentences."""
    from spacy_rhetoric import long_docs
    from spacy_rhetoric.apps.annotate import AnnotateSettings, annotate_corpus
    from spacy_rhetoric.readers.fulltext import MAX_SENTENCE_TOKENS

    joined = []
    monkeypatch.setattr(long_docs, "LONG_DOC_CHARS", 20_000)
    monkeypatch.setattr(long_docs, "join_docs", lambda docs, _join=long_docs.join_docs: joined.append(len(docs))
                        or _join(docs))

    words = [f"word{i % 97}" + ("," if i % 200 == 199 else "") for i in range(5000)]
    text = "We begin with one short sentence. " + " ".join(words)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "long.txt").write_text(text + "\n", encoding="utf8")
    summary = annotate_corpus(model_dir, [tmp_path / "in"], tmp_path / "out", AnnotateSettings(spacy=True))
    nlp = spacy.load(model_dir)
    (doc,) = DocBin().from_disk(tmp_path / "out" / "annotations.spacy").get_docs(nlp.vocab)
    assert doc.text == text
    sents = list(doc.sents)
    assert sents[0].text == "We begin with one short sentence."
    assert max(len(s) for s in sents) <= MAX_SENTENCE_TOKENS and len(sents) >= 5000 // MAX_SENTENCE_TOKENS
    assert all(s.text.endswith(",") for s in sents[1:-1])  # cut after a comma of the last 128 tokens
    assert summary["sentences"] == len(sents)
    records = [json.loads(line) for line in (tmp_path / "out" / "annotations.jsonl").read_text().splitlines()]
    assert len(records) == len(sents) and all(r["label"] for r in records)
    assert joined == [1]  # 39,000 characters: one piece of whole sentences through process_long_doc
