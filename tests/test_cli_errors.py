"""Ordinary mistakes given to ``convert``, ``evaluate`` and ``align``: one
line naming the problem and a non-zero exit, never a traceback, never an
input overwritten, nothing computed before every output path is known to be
writable, and no partly written output under the real name."""
import json

import pytest
import spacy
from helpers import cli_text
from spacy.tokens import DocBin
from spacy.training import Example
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
import spacy_rhetoric.cli.align  # noqa: F401  registers the command
import spacy_rhetoric.cli.convert  # noqa: F401
import spacy_rhetoric.cli.evaluate  # noqa: F401
from spacy_rhetoric.cli import app
from spacy_rhetoric.readers.common import doc_from_sentences

UNWRITABLE = "/proc/spacy-rhetoric-test/out"  # no one can create files under /proc
CSABSTRUCT = {"sentences": ["We study parsing.", "Parsing is hard."], "labels": ["objective", "background"]}
PMC = {"id": "PMC1", "sentence": "we used a parser.", "label": "methods"}


def run(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    text = cli_text(result)  # wasabi wraps long lines
    assert "Traceback" not in text, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, text


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf8")
    return path


# -- convert ------------------------------------------------------------------


def test_convert_refuses_to_overwrite_its_input(tmp_path):
    src = write_jsonl(tmp_path / "a.jsonl", [CSABSTRUCT])
    before = src.read_bytes()
    code, out = run("convert", "csabstruct", src, src)
    assert code == 1 and "same path as the input" in out
    assert src.read_bytes() == before


@pytest.mark.parametrize("content,why", [
    (b"", "holds no records"),
    (b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe\n", "none of the 1 records"),
    ("".join(json.dumps(PMC) + "\n" for _ in range(50)).encode(), "none of the 50 records"),
])
def test_convert_nothing_usable_fails_without_output(tmp_path, content, why):
    src = tmp_path / "in.jsonl"
    src.write_bytes(content)
    out = tmp_path / "out.spacy"
    code, text = run("convert", "csabstruct", src, out)
    assert code == 1 and "Nothing done" in text and why in text
    assert not out.exists()


def test_convert_bad_paths(tmp_path):
    src = write_jsonl(tmp_path / "a.jsonl", [CSABSTRUCT])
    (tmp_path / "no_topics").mkdir()
    code, text = run("convert", "clscisumm", tmp_path / "no_topics", tmp_path / "o.spacy")
    assert code == 1 and "Nothing done: no clscisumm input found in the folder" in text
    code, text = run("convert", "csabstruct", tmp_path / "missing.jsonl", tmp_path / "o.spacy")
    assert code == 1 and "not found" in text and "missing.jsonl" in text
    code, text = run("convert", "csabstruct", tmp_path, tmp_path / "o.spacy")
    assert code == 1 and "is a directory" in text
    code, text = run("convert", "csabstruct", src, f"{UNWRITABLE}/o.spacy")
    assert code == 1 and "cannot write output" in text
    code, text = run("convert", "csabstruct", src, src / "o.spacy")
    assert code == 1 and "not a directory" in text
    code, text = run("convert", "csabstruct", src, tmp_path)
    assert code == 1 and "existing directory" in text
    code, text = run("convert", "csabstruct", src, tmp_path / "o.spacy", "--limit", "-1")
    assert code == 2 and "must be 0 or more" in text
    code, text = run("convert", "nope", src, tmp_path / "o.spacy")
    assert code == 2 and "unknown format 'nope'" in text


def test_convert_writes_atomically(tmp_path, monkeypatch):
    src = write_jsonl(tmp_path / "a.jsonl", [CSABSTRUCT])
    out = tmp_path / "o.spacy"
    out.write_bytes(b"x\x9cprevious output")  # a DocBin starts as zlib data (io.OUTPUT_KINDS)

    def broken_to_disk(self, path):
        with open(path, "wb") as fileh:
            fileh.write(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(DocBin, "to_disk", broken_to_disk)
    result = CliRunner().invoke(app, ["convert", "csabstruct", str(src), str(out)])
    # a full disk is one line naming the file, exit 1 (io.disk_full), and the old output is untouched
    assert result.exit_code == 1 and "no space left on device writing" in result.output
    assert "Traceback" not in result.output
    assert out.read_bytes() == b"x\x9cprevious output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "o.spacy"]


# -- evaluate -----------------------------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny untrained pipeline: coarse classifier (labels objective,
    background, method) and sentence encoder."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_function_classifier")
    nlp.add_pipe("rhetoric_sentence_encoder")
    refs = [doc_from_sentences(nlp, ["We study parsing.", "Parsing is hard.", "We use a chart."],
                               labels=["objective", "background", "method"])] * 2
    nlp.initialize(lambda: [Example(nlp.make_doc(r.text), r) for r in refs])
    path = tmp_path_factory.mktemp("eval_model") / "model"
    nlp.to_disk(path)
    return path


def gold_file(path, labels_per_doc):
    nlp = spacy.blank("en")
    docs = [doc_from_sentences(nlp, [f"Sentence {i} of doc {j} here." for i in range(len(labels))],
                               labels=labels) for j, labels in enumerate(labels_per_doc)]
    DocBin(docs=docs, store_user_data=True).to_disk(path)
    return path


COARSE = [["objective", "background", "method"], ["background", "method", "objective"]] * 2


def test_evaluate_checks_outputs_before_any_work(tmp_path, model_dir):
    dev = gold_file(tmp_path / "dev.spacy", COARSE)
    before = dev.read_bytes()
    code, text = run("evaluate", model_dir, dev, "--tsne", f"{UNWRITABLE}/t.png", "-o", tmp_path / "r.json")
    assert code == 1 and "cannot write t-SNE plot" in text
    assert "Evaluating" not in text and not (tmp_path / "r.json").exists()
    code, text = run("evaluate", model_dir, dev, "-o", dev)
    assert code == 1 and "same path as the input" in text and dev.read_bytes() == before
    code, text = run("evaluate", model_dir, dev, "-o", tmp_path / "r.json", "--tsne", tmp_path / "r.json")
    assert code == 1 and "are the same path" in text


def test_evaluate_bad_inputs(tmp_path, model_dir):
    dev = gold_file(tmp_path / "dev.spacy", COARSE)
    code, text = run("evaluate", model_dir, tmp_path / "missing.spacy")
    assert code == 1 and "not found: " in text
    code, text = run("evaluate", model_dir, tmp_path)
    assert code == 1 and "is a directory" in text
    (tmp_path / "junk.spacy").write_bytes(b"not a docbin")
    code, text = run("evaluate", model_dir, tmp_path / "junk.spacy")
    assert code == 1 and "cannot read" in text and "junk.spacy" in text
    code, text = run("evaluate", tmp_path / "no_model", dev)
    assert code == 1 and "cannot load pipeline" in text
    code, text = run("evaluate", model_dir, dev, "--unit", "page")
    assert code == 2 and "must be 'doc' or 'sentence'" in text
    code, text = run("evaluate", model_dir, dev, "--batch-size", "0")
    assert code == 2


def test_evaluate_empty_set_is_nothing_done(tmp_path, model_dir):
    DocBin().to_disk(tmp_path / "empty.spacy")
    code, text = run("evaluate", model_dir, tmp_path / "empty.spacy", "-o", tmp_path / "r.json")
    assert code == 1 and "Nothing done" in text and "no sentences with a gold label" in text
    assert not (tmp_path / "r.json").exists()
    dev = gold_file(tmp_path / "dev.spacy", COARSE)
    code, text = run("evaluate", model_dir, dev, "--train", tmp_path / "empty.spacy")
    assert code == 1 and "--train" in text and "no sentences with a gold label" in text
    assert "Evaluating" not in text
    # A pipeline that sets neither vectors nor labels measures nothing.
    blank = tmp_path / "blank"
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.to_disk(blank)
    code, text = run("evaluate", blank, dev, "-o", tmp_path / "r.json")
    assert code == 1 and "Nothing done: no model gave sentence vectors" in text
    assert not (tmp_path / "r.json").exists()


def test_evaluate_unknown_label_field_is_an_error(tmp_path, model_dir):
    dev = gold_file(tmp_path / "dev.spacy", COARSE)
    code, text = run("evaluate", model_dir, dev, "--label-field", "fine_label")
    assert code == 1 and "label field 'fine_label'" in text and "'label'" in text
    assert "Evaluating" not in text


def test_evaluate_warns_when_label_sets_cannot_match(tmp_path, model_dir):
    # PMC-style labels against a CSAbstruct-style classifier.
    dev = gold_file(tmp_path / "dev.spacy", [["objective", "methods", "results"]] * 4)
    code, text = run("evaluate", model_dir, dev, "-o", tmp_path / "r.json")
    assert code == 0, text
    assert "gold labels the classifier never predicts: methods, results (8 of 12 sentences)" in text
    assert "classifier labels never seen in the gold data: background, method" in text
    report = json.loads((tmp_path / "r.json").read_text())
    mismatch = report["models"][str(model_dir)]["classifier"]["label_mismatch"]
    assert mismatch["gold_not_in_classifier"] == ["methods", "results"]
    # Matching label sets: no warning.
    dev = gold_file(tmp_path / "dev2.spacy", COARSE)
    code, text = run("evaluate", model_dir, dev)
    assert code == 0 and "label sets differ" not in text and "never seen" not in text
    # A classifier label missing from a small dev set is only a note.
    dev = gold_file(tmp_path / "dev3.spacy", [["objective", "background"]] * 4)
    code, text = run("evaluate", model_dir, dev)
    assert code == 0 and "label sets differ" not in text
    assert "classifier labels never seen in the gold data: method" in text


# -- align --------------------------------------------------------------------


def test_align_option_and_path_errors(tmp_path, model_dir):
    a = tmp_path / "a.txt"
    a.write_text("We study parsing.\nParsing is hard.\n", encoding="utf8")
    code, text = run("align", a, a, "--model", model_dir, "-k", "0")
    assert code == 2 and "must be at least 1, got 0" in text
    code, text = run("align", a, tmp_path / "b.txt", "--model", model_dir)
    assert code == 1 and "paper B not found" in text
    code, text = run("align", a, tmp_path, "--model", model_dir)
    assert code == 1 and "is a directory" in text
    before = a.read_bytes()
    code, text = run("align", a, a, "--model", model_dir, "--lines", "-o", a)
    assert code == 1 and "same path as the input" in text and a.read_bytes() == before
    code, text = run("align", a, a, "--model", model_dir, "-o", f"{UNWRITABLE}/p.jsonl")
    assert code == 1 and "cannot write output" in text
    code, text = run("align", a, a, "--model", tmp_path / "no_model")
    assert code == 1 and "cannot load pipeline" in text
    out = tmp_path / "pairs.jsonl"
    code, text = run("align", a, a, "--model", model_dir, "--lines", "-k", "5", "-o", out)
    assert code == 0 and "paper B has only 2 sentences" in text
    assert len(out.read_text().splitlines()) == 4


# -- guard: the project's errors are one line, programming errors keep their traceback


def test_guard_turns_project_errors_into_one_line_and_lets_bugs_through():
    import click
    import numpy

    from spacy_rhetoric.cli.common import USER_ERRORS, guard
    from spacy_rhetoric.errors import RhetoricError
    from spacy_rhetoric.io import PathError
    from spacy_rhetoric.losses import SoftmaxLoss
    from spacy_rhetoric.readers.common import ReaderError
    from spacy_rhetoric.readers.convert import NothingConverted
    from spacy_rhetoric.readers.splits import split_doc_ids
    from spacy_rhetoric.search.sources import SearchIndexError

    assert all(issubclass(cls, RhetoricError)
               for cls in (PathError, ReaderError, SearchIndexError, NothingConverted))
    for make in (lambda: PathError("out.spacy: is a directory"), lambda: FileNotFoundError("no such file: x"),
                 lambda: split_doc_ids(["a", "b"], share=2.0)):  # a RhetoricError raised by the package
        with pytest.raises(SystemExit) as exit_info:
            with guard("convert"):
                raise make()
        assert exit_info.value.code == 1
    # A plain ValueError is a bug, wherever it is raised: inside a library
    # (numpy's shape mismatch) or by one of the package's internal checks.
    with pytest.raises(ValueError, match="shapes") as bug:
        with guard("convert"):
            numpy.dot(numpy.zeros((2, 3)), numpy.zeros((2, 3)))
    assert not isinstance(bug.value, USER_ERRORS)
    with pytest.raises(ValueError, match="n_classes and width") as bug:
        with guard("convert"):
            SoftmaxLoss().initialize(0, 8)
    assert type(bug.value) is ValueError
    with pytest.raises(click.BadParameter):  # not a ValueError: untouched
        with guard():
            raise click.BadParameter("x")


def _convert_raising(monkeypatch, tmp_path, fail):
    """``convert`` with ``convert_corpus`` replaced by ``fail``."""
    import spacy_rhetoric.cli.convert as convert_cli

    monkeypatch.setattr(convert_cli, "convert_corpus", lambda *args, **kwargs: fail())
    src = write_jsonl(tmp_path / "a.jsonl", [CSABSTRUCT])
    return CliRunner().invoke(app, ["convert", "csabstruct", str(src), str(tmp_path / "out.spacy")])


def test_guarded_command_keeps_the_traceback_of_a_plain_value_error(tmp_path, monkeypatch):
    import traceback

    from spacy_rhetoric import extensions

    def internal_bug():  # an internal invariant of the package: 1 sentence, 2 labels
        doc = doc_from_sentences(spacy.blank("en"), ["One sentence."])
        extensions.set_sent_labels(doc, ["a", "b"])

    result = _convert_raising(monkeypatch, tmp_path, internal_bug)
    # Not turned into a one-line exit: the ValueError itself leaves the command,
    # with its traceback down to the check that raised it.
    assert type(result.exception) is ValueError, result.output
    assert "1 sentences but 2 labels" in str(result.exception)
    frames = traceback.extract_tb(result.exc_info[2])
    assert frames[-1].filename.endswith("extensions.py") and frames[-1].name == "set_sent_labels"
    assert "✘" not in result.output


def test_guarded_command_turns_a_rhetoric_error_into_one_line_and_exit_1(tmp_path, monkeypatch):
    from spacy_rhetoric.readers.splits import split_doc_ids

    result = _convert_raising(monkeypatch, tmp_path, lambda: split_doc_ids(["a", "b"], share=2.0))
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    text = cli_text(result)
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines == ["✘ convert: share must be between 0 and 1, got 2.0"], lines
