"""Issue 24: nothing overwritten, nothing merged, one bad paper never stops a
batch. One test (or a few) per item of the issue; each fails on the code
before the fix. Tiny inline files in tmp dirs, a tiny untrained pipeline."""
import os
import stat

import pytest
import spacy
from helpers import cli_text
from spacy.tokens import DocBin
from spacy.training import Example
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
import spacy_rhetoric.cli.annotate  # noqa: F401  registers the commands
import spacy_rhetoric.cli.convert  # noqa: F401
import spacy_rhetoric.cli.evaluate  # noqa: F401
import spacy_rhetoric.cli.render  # noqa: F401
from spacy_rhetoric.cli import app
from spacy_rhetoric.io import PathError, atomic_write_text, check_output
from spacy_rhetoric.readers.common import doc_from_sentences

LABELS = ["background", "objective", "method", "result"]
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
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_function_classifier")
    nlp.add_pipe("rhetoric_sentence_encoder")
    sents = ["Parsing is important.", "We aim to parse.", "We propose a method.", "It works."]
    ref = doc_from_sentences(nlp, sents, labels=LABELS)
    nlp.initialize(lambda: [Example(nlp.make_doc(ref.text), ref)])
    path = tmp_path_factory.mktemp("reliability_model") / "pipeline"
    nlp.to_disk(path)
    return path


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
    from spacy_rhetoric.annotate import annotate_corpus

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
