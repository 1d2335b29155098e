"""Reliability, round four: no code runs from a model folder, paper text
reaches a terminal printable, pipeline rules cannot hang, tampered pipeline
settings are one line, and papers in other scripts, text starting with "<",
long file names and folders with files that are not papers are read right."""
import builtins
import json

import pytest
from helpers import cli_text, save_tiny_pipeline
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
from spacy_rhetoric.cli import app, load_commands
from spacy_rhetoric.errors import RhetoricError

# -- a model folder that asks to run its own code ----------------------------------------------------

EVIL_CODE = """import pathlib
pathlib.Path({marker!r}).write_text("ran")
from transformers import PretrainedConfig


class EvilConfig(PretrainedConfig):
    model_type = "evil"
"""


@pytest.fixture
def evil_folder(tmp_path, monkeypatch):
    """A model folder whose config.json has an ``auto_map`` and no
    ``model_type``: transformers would import its Python files (each writes
    MARKER when imported). ``input`` answers "y" to any prompt and counts
    the prompts."""
    folder = tmp_path / "evil"
    folder.mkdir()
    marker = tmp_path / "MARKER"
    auto_map = {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel",
                "AutoModelForMaskedLM": "modeling_evil.EvilModel",
                "AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}
    (folder / "config.json").write_text(json.dumps({"auto_map": auto_map, "architectures": ["EvilModel"]}))
    for name in ("configuration_evil", "modeling_evil", "tokenization_evil"):
        (folder / f"{name}.py").write_text(EVIL_CODE.format(marker=str(marker)))
    prompts = []
    monkeypatch.setattr(builtins, "input", lambda *args: prompts.append(args) or "y")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return folder, marker, prompts


def _finetuned(path):
    from spacy_rhetoric.ml.finetuned import FinetunedEncoder

    FinetunedEncoder(str(path), 1, 0, 2, 32)


def _cosaemb(path):
    from spacy_rhetoric.ml.section_chunks import load_cosaemb_encoder

    load_cosaemb_encoder(str(path))


def _sentence_transformer(path):
    from spacy_rhetoric.ml.st_models import load_sentence_transformer

    load_sentence_transformer(path)


def _sentmask(path):
    from spacy_rhetoric.pretrain.sentmask import SentMaskSettings, load_encoder

    load_encoder(SentMaskSettings(model=str(path)))


def _sentmask_mlm(path):
    from spacy_rhetoric.pretrain.sentmask import SentMaskSettings, load_encoder

    load_encoder(SentMaskSettings(model=str(path), mlm_weight=1.0))


def _paragraph_retrieval(path):
    from spacy_rhetoric.pretrain.paragraph_retrieval import paragraph_retrieval

    paragraph_retrieval(str(path), [])


def _chunked_transformer(path):
    from spacy_rhetoric.ml.span_getters import sentence_windows  # noqa: F401  (registers the getters)
    from spacy_rhetoric.ml.transformer import ChunkedTransformerModel

    ChunkedTransformerModel(str(path), lambda docs: [[doc[:]] for doc in docs]).initialize()


@pytest.mark.parametrize("load", [_finetuned, _cosaemb, _sentence_transformer, _sentmask, _sentmask_mlm,
                                  _paragraph_retrieval, _chunked_transformer])
def test_no_code_runs_from_a_model_folder(evil_folder, load):
    folder, marker, prompts = evil_folder
    with pytest.raises((RhetoricError, ValueError)) as err:
        load(folder)
    assert not marker.exists(), "code from the model folder ran"
    assert not prompts, "transformers asked whether to run the folder's code"
    if load is not _finetuned:  # the one-line error of our own loads
        assert isinstance(err.value, RhetoricError) and "never runs code" in str(err.value)
        assert "\n" not in str(err.value)


def test_saved_transformer_pipeline_never_runs_code_of_its_own(evil_folder, tmp_path):
    """A saved transformer whose stored config and tokenizer files ask for
    code (``HFShim.from_bytes`` writes them to a folder and loads it)."""
    from spacy_rhetoric.ml.hf_safe import NoRemoteCode
    from spacy_rhetoric.ml.transformer import ChunkedTransformerModel

    folder, marker, prompts = evil_folder
    model = ChunkedTransformerModel("unused", lambda docs: [[doc[:]] for doc in docs])
    shims = [shim for layer in model.walk() for shim in layer.shims]
    assert shims and all(isinstance(shim.config_cls, NoRemoteCode) and isinstance(shim.tokenizer_cls, NoRemoteCode)
                         and isinstance(shim.model_cls, NoRemoteCode) for shim in shims)
    with pytest.raises(RhetoricError, match="never runs code"):
        shims[0].config_cls.from_pretrained(str(folder / "config.json"))
    with pytest.raises(RhetoricError, match="never runs code"):
        shims[0].tokenizer_cls.from_pretrained(str(folder))
    assert not marker.exists() and not prompts


def test_cli_guard_makes_a_refused_folder_one_line(capsys):
    from spacy_rhetoric.cli.common import guard

    with pytest.raises(SystemExit) as exit_info:
        with guard("annotate"):
            raise ValueError("The repository /x/evil contains custom code which must be executed to correctly "
                             "load the model.\nPlease pass the argument `trust_remote_code=True` to allow custom code")
    assert exit_info.value.code == 1
    assert "/x/evil: the model asks to run Python code of its own" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(ValueError, match="plain"):
        with guard("annotate"):
            raise ValueError("plain")


# -- what reaches a terminal ------------------------------------------------------------------------------

HOSTILE = "We propose \x1b]0;pwned\x07\x1b[2J a method \x9b31m with a \u202eflipped tail."


def test_printable_shows_every_control_character():
    from spacy_rhetoric.cli.common import json_line, printable

    shown = printable(HOSTILE)
    assert all(ch not in shown for ch in "\x1b\x07\x9b\u202e\n\r")
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in shown and "\\u202e" in shown and "\\x9b" in shown
    assert printable("Straße 東京 — ok") == "Straße 東京 — ok"
    assert printable("a\r\nb\tc") == "a b c" and printable("a\nb", lines=True) == "a\nb"
    line = json_line({"text": HOSTILE, "x": "東京"})
    assert json.loads(line) == {"text": HOSTILE, "x": "東京"}
    assert all(ch not in line for ch in "\x1b\x07\x9b\u202e") and "東京" in line


@pytest.fixture(scope="module")
def encoder_pipeline(tmp_path_factory):
    return save_tiny_pipeline(tmp_path_factory.mktemp("r4_pipeline") / "pipeline")


def _no_raw_controls(output: str) -> None:
    for seq in ("\x1b]0;", "\x07", "\x1b[2J", "\x9b", "\u202e"):
        assert seq not in output, f"{seq!r} reached the terminal"


def test_align_and_search_tables_are_printable(encoder_pipeline, tmp_path):
    load_commands()
    runner = CliRunner()
    (tmp_path / "papers").mkdir()
    a, b = tmp_path / "papers" / "a.txt", tmp_path / "papers" / "b.txt"
    a.write_text(f"{HOSTILE} Results are good.\n", encoding="utf8")
    b.write_text(f"We study parsing. {HOSTILE}\n", encoding="utf8")
    result = runner.invoke(app, ["align", str(a), str(b), "-m", str(encoder_pipeline), "--width", "0"])
    assert result.exit_code == 0, result.output
    assert "pwned" in result.output
    _no_raw_controls(result.output)
    out = tmp_path / "x.index"
    result = runner.invoke(app, ["index", str(encoder_pipeline), str(tmp_path / "papers"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    for width in ("0", "40"):
        result = runner.invoke(app, ["search", str(out), "We propose a method.", "--width", width])
        assert result.exit_code == 0, result.output
        assert "pwned" in cli_text(result) or width == "40"
        _no_raw_controls(result.output)
    result = runner.invoke(app, ["search", str(out), "We propose a method.", "--json"])
    assert result.exit_code == 0
    _no_raw_controls(result.output)
    assert any(json.loads(line)["text"].startswith("We propose \x1b]0;") for line in result.output.splitlines())


def test_failure_lines_are_printable(tmp_path):
    load_commands()
    bad = tmp_path / "bad\x1b]0;pwned\x07.spacy"
    bad.write_bytes(b"not a docbin")
    result = CliRunner().invoke(app, ["render", str(bad), "-o", str(tmp_path / "o.html")])
    assert result.exit_code == 1
    assert "pwned" in result.output
    _no_raw_controls(result.output)


def test_skip_lines_of_convert_are_printable(tmp_path):
    """convert's skipped-file lines show a file name's escape sequence written out."""
    load_commands()
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.txt").write_text("# Title\n\nWe propose a parser. It works.\n", encoding="utf8")
    (folder / "bad\x1b[2J.tei.xml").write_text("<TEI><broken", encoding="utf8")
    result = CliRunner().invoke(app, ["convert", "auto", str(folder), str(tmp_path / "out.spacy")])
    assert result.exit_code == 0, result.output
    assert "bad\\x1b[2J" in result.output
    _no_raw_controls(result.output)


# -- a pipeline's section rules cannot stall a run -------------------------------------------------------


@pytest.fixture
def alarm():
    """Fail (instead of hanging) when the block runs past ``seconds``."""
    import signal

    def expire(signum, frame):
        raise TimeoutError("still running")

    previous = signal.signal(signal.SIGALRM, expire)
    yield lambda seconds: signal.alarm(seconds)
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _tagger_with_rules(tmp_path, patterns):
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_section_tagger")
    nlp.to_disk(tmp_path / "pipe")
    rules = tmp_path / "pipe" / "rhetoric_section_tagger" / "rules.json"
    data = json.loads(rules.read_text())
    data["rules"] = [{"category": "method", "pattern": p} for p in patterns] + data["rules"]
    rules.write_text(json.dumps(data))
    return spacy.load(tmp_path / "pipe").get_pipe("rhetoric_section_tagger")


def test_backtracking_section_rule_is_bounded(tmp_path, alarm):
    import time

    tagger = _tagger_with_rules(tmp_path, [r"^(a+)+$"])
    alarm(10)
    start = time.perf_counter()
    assert tagger.tag_heading("a" * 40 + "b") == "unknown"  # the packaged rules and model decide nothing
    assert tagger.tag_heading("Introduction") == "introduction"
    assert time.perf_counter() - start < 2.0


def test_runaway_section_rule_is_an_error_naming_it(tmp_path, alarm):
    import time

    tagger = _tagger_with_rules(tmp_path, [r"^(a|aa)+$"])
    assert tagger.tag_heading("Introduction") == "introduction"
    alarm(10)
    start = time.perf_counter()
    with pytest.raises(RhetoricError, match=r"section rule '\^\(a\|aa\)\+\$' \(category 'method'\) ran past"):
        tagger.tag_heading("a" * 60 + "b")
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize("rules", ['{"rules": "x"}', '["x"]', '{"rules": [{"category": "m", "pattern": "(("}]}'])
def test_malformed_rules_file_is_one_error(tmp_path, rules):
    from spacy_rhetoric.section_headings import HeadingRules

    path = tmp_path / "rules.json"
    path.write_text(rules)
    with pytest.raises(RhetoricError, match="section rule"):
        HeadingRules.from_file(path)


# -- a tampered pipeline folder is one line ---------------------------------------------------------------


def _tampered(src, dst, old, new):
    import shutil

    shutil.copytree(src, dst)
    config = (dst / "config.cfg").read_text(encoding="utf8")
    assert old in config
    (dst / "config.cfg").write_text(config.replace(old, new, 1), encoding="utf8")
    return dst


@pytest.mark.parametrize("old,new", [("width = 96", "width = 1000000000000"),
                                     ("width = 64", "width = 1000000000000"),
                                     ('lang = "en"', 'lang = "../../etc/x"')])
def test_tampered_pipeline_is_one_line(encoder_pipeline, tmp_path, old, new):
    load_commands()
    pipeline = _tampered(encoder_pipeline, tmp_path / "pipe", old, new)
    paper = tmp_path / "a.txt"
    paper.write_text("We propose a method. It works.\n", encoding="utf8")
    runner = CliRunner()
    for argv in (["render", str(paper), "-m", str(pipeline), "-o", str(tmp_path / "o.html")],
                 ["align", str(paper), str(paper), "-m", str(pipeline)]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 1, result.output
        assert isinstance(result.exception, SystemExit), f"{argv[0]}: a traceback ({result.exception!r})"
        text = cli_text(result)
        assert "cannot load the pipeline" in text and ("1000000000000" in text or "../../etc/x" in text)
        assert len(result.output.strip().splitlines()) <= 6


def test_guard_keeps_tracebacks_of_other_errors(encoder_pipeline, tmp_path):
    from spacy_rhetoric.cli.common import guard, loading_pipeline

    with pytest.raises(KeyError):
        with guard("x"):
            raise KeyError("a bug, not a pipeline")
    pipeline = _tampered(encoder_pipeline, tmp_path / "pipe", 'lang = "en"', 'lang = "../x"')
    with pytest.raises(ImportError) as err:
        spacy_rhetoric.util.load_parser(str(pipeline))
    assert loading_pipeline(err.value)


# -- papers in Chinese and Japanese ------------------------------------------------------------------------

ZH_PAPER = "标题\n\n摘要\n\n本文提出了一种新方法。结果很好。\n\n1 引言\n\n近年来进展很大。"


def _sentences(doc):
    from spacy_rhetoric import extensions as ext

    return [(s.text, ext.get_span_value(s, ext.HEADING)) for s in doc.sents]


def test_chinese_text_is_segmented_by_its_own_full_stops(tmp_path):
    import spacy

    from spacy_rhetoric.readers.papers import read_paper

    path = tmp_path / "zh.txt"
    path.write_text(ZH_PAPER, encoding="utf8")
    doc = read_paper(path, spacy.blank("en"))
    assert _sentences(doc) == [("标题", None), ("本文提出了一种新方法。", "Abstract"), ("结果很好。", "Abstract"),
                               ("近年来进展很大。", "1 引言")]
    # nothing lost: every paragraph that is not a heading is in the Doc
    for paragraph in ("标题", "本文提出了一种新方法。结果很好。", "近年来进展很大。"):
        assert paragraph in doc.text


def test_cjk_lines_are_never_headings_for_having_no_case():
    from spacy_rhetoric.readers.text import detect_heading

    assert detect_heading("本文提出了一种新方法。结果很好。") is None
    assert detect_heading("近年来进展很大") is None
    assert detect_heading("1 引言") == "1 引言" and detect_heading("参考文献") == "参考文献"
    assert detect_heading("MATERIALS AND METHODS") == "MATERIALS AND METHODS"
    assert detect_heading("2.1 Results") == "2.1 Results" and detect_heading("2.1 results are good") is None


def test_japanese_quotes_and_wrapped_lines(tmp_path):
    import spacy

    from spacy_rhetoric.readers.papers import read_paper

    path = tmp_path / "ja.txt"
    path.write_text("要旨\n\n本稿では新しい手法を\n提案する！結果は良い？「はい。」\n\n参考文献\n\n山田 2020。",
                    encoding="utf8")
    doc = read_paper(path, spacy.blank("en"))
    assert _sentences(doc) == [("本稿では新しい手法を提案する！", "Abstract"), ("結果は良い？", "Abstract"),
                               ("「はい。」", "Abstract")]


def test_mixed_and_latin_text_split_as_before(tmp_path):
    import spacy

    from spacy_rhetoric.readers.papers import read_paper

    path = tmp_path / "mixed.txt"
    path.write_text("1 Introduction\n\nWe use BERT. 我们提出一种方法。Then we test it! Es funktioniert gut.\n",
                    encoding="utf8")
    doc = read_paper(path, spacy.blank("en"))
    assert [s for s, _ in _sentences(doc)] == ["We use BERT.", "我们提出一种方法。", "Then we test it!",
                                               "Es funktioniert gut."]


def test_cjk_in_tei_paragraphs(tmp_path):
    import spacy

    from spacy_rhetoric.readers.papers import read_paper

    path = tmp_path / "zh.tei.xml"
    path.write_text('<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>T</title>'
                    '</titleStmt></fileDesc></teiHeader><text><body><div><head>引言</head>'
                    '<p>本文提出了一种新方法。结果很好。</p></div></body></text></TEI>', encoding="utf8")
    assert [s for s, _ in _sentences(read_paper(path, spacy.blank("en")))] == ["本文提出了一种新方法。", "结果很好。"]


# -- text that begins with "<" --------------------------------------------------------------------------


@pytest.mark.parametrize("name,content,fmt", [
    ("bold.txt", "<b>Bold</b> claims. We propose a method.", "text"),
    ("notes.md", "<!-- draft -->\n# Title\n\nWe propose a method.", "text"),
    ("plain", "<b>Bold</b> claims. We propose a method.", "text"),
    ("tei.txt", '<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><body/></text></TEI>', "tei"),
    ("jats.nxml", "<article><body/></article>", "jats"),
])
def test_text_beginning_with_a_tag_is_text(tmp_path, name, content, fmt):
    from spacy_rhetoric.readers.papers import detect_format

    path = tmp_path / name
    path.write_text(content, encoding="utf8")
    assert detect_format(path) == fmt


@pytest.mark.parametrize("name,content", [("odd.xml", "<html-ish>x</html-ish>"),
                                          ("decl", '<?xml version="1.0"?><foo>x</foo>')])
def test_unknown_xml_is_still_refused(tmp_path, name, content):
    from spacy_rhetoric.readers.common import ReaderError
    from spacy_rhetoric.readers.papers import detect_format

    path = tmp_path / name
    path.write_text(content, encoding="utf8")
    with pytest.raises(ReaderError, match="unknown XML root element"):
        detect_format(path)


def test_bold_text_is_read_not_skipped(tmp_path):
    import spacy

    from spacy_rhetoric.readers.common import ReadStats
    from spacy_rhetoric.readers.papers import read_papers

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bold.txt").write_text("<b>Bold</b> claims. We propose a method.", encoding="utf8")
    stats = ReadStats(name="papers")
    docs = list(read_papers(tmp_path / "in", spacy.blank("en"), stats=stats))
    assert stats.skipped == 0 and len(docs) == 1
    assert [s.text for s in docs[0].sents][-1] == "We propose a method."


def test_render_format_option(encoder_pipeline, tmp_path):
    load_commands()
    paper = tmp_path / "paper.xml"
    paper.write_text("<b>Bold</b> claims. We propose a method.", encoding="utf8")
    runner = CliRunner()
    result = runner.invoke(app, ["render", str(paper), "-m", str(encoder_pipeline), "-o", str(tmp_path / "a.html")])
    assert result.exit_code == 1 and "unknown XML root element" in cli_text(result)
    result = runner.invoke(app, ["render", str(paper), "-m", str(encoder_pipeline), "-o", str(tmp_path / "b.html"),
                                 "--format", "text"])
    assert result.exit_code == 0, result.output
    assert "We propose a method." in (tmp_path / "b.html").read_text(encoding="utf8")
    result = runner.invoke(app, ["render", str(paper), "-o", str(tmp_path / "c.html"), "--format", "word"])
    assert result.exit_code == 2 and "unknown format" in cli_text(result)


# -- files that are not papers ---------------------------------------------------------------------------


def _mixed_folder(root):
    root.mkdir()
    (root / "paper.txt").write_text("We propose a method. It works well.\n", encoding="utf8")
    (root / "notes.md").write_text("# Notes\n\nWe study parsing. Results are good.\n", encoding="utf8")
    (root / "README.md").write_text("# Corpus\n\nThese are the papers of our study.\n", encoding="utf8")
    (root / "LICENSE").write_text("Permission is hereby granted, free of charge.\n", encoding="utf8")
    (root / "scores.csv").write_text("paper,score\npaper.txt,0.5\nnotes.md,0.7\n", encoding="utf8")
    (root / "scores.txt").write_text("paper\tscore\tlabel\na\t0.5\tx\nb\t0.7\ty\nc\t0.1\tz\n", encoding="utf8")
    (root / "figure.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    (root / "data.zip").write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    return root


def test_files_that_are_not_papers_are_skipped_and_counted(tmp_path):
    import spacy

    from spacy_rhetoric import extensions as ext
    from spacy_rhetoric.readers.common import ReadStats
    from spacy_rhetoric.readers.papers import read_papers

    folder = _mixed_folder(tmp_path / "in")
    stats = ReadStats(name="papers")
    docs = list(read_papers(folder, spacy.blank("en"), stats=stats))
    assert sorted(ext.get_doc_value(d, ext.DOC_ID) for d in docs) == ["notes", "paper"]
    assert stats.read == 8 and stats.skipped == 6
    reasons = " ".join(stats.examples) + " " + " ".join(str(k) for k in stats.reasons)
    for what in ("an image", "a table", "an archive", "README", "LICENSE"):
        assert what in reasons, what
    # named on the command line, a README is read like any text
    assert len(list(read_papers([folder / "README.md"], spacy.blank("en")))) == 1


def test_tab_indented_text_is_a_paper(tmp_path):
    from spacy_rhetoric.readers.papers import detect_format, not_a_paper

    path = tmp_path / "indented.txt"
    path.write_text("\tWe propose a method.\n\tIt works well.\n\tResults are good.\n\tWe agree.\n", encoding="utf8")
    assert detect_format(path) == "text"
    assert not_a_paper(tmp_path / "t.txt", b"a\tb\tc\n1\t2\t3\n4\t5\t6\n") == "not a paper: a table (tab-separated columns)"


def test_annotate_and_index_skip_what_is_not_a_paper(encoder_pipeline, tmp_path):
    import sqlite3

    load_commands()
    folder = _mixed_folder(tmp_path / "in")
    runner = CliRunner()
    result = runner.invoke(app, ["annotate", str(encoder_pipeline), str(folder), "-o", str(tmp_path / "ann")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "ann" / "summary.json").read_text())
    assert summary["inputs_annotated"] == 2 and summary["inputs_skipped"] == 6
    inputs = {json.loads(line)["input"] for line in (tmp_path / "ann" / "annotations.jsonl").read_text().splitlines()}
    assert inputs == {"paper.txt", "notes.md"}
    assert "not a paper" in cli_text(result)
    result = runner.invoke(app, ["index", str(encoder_pipeline), str(folder), "-o", str(tmp_path / "x.index")])
    assert result.exit_code == 0, result.output
    con = sqlite3.connect(str(tmp_path / "x.index" / "sentences.sqlite"))
    try:
        assert {row[0] for row in con.execute("SELECT DISTINCT input FROM sentences")} == {"paper.txt", "notes.md"}
    finally:
        con.close()


# -- a PDF with a long name through GROBID -------------------------------------------------------------

TEI_ANSWER = (b'<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title type="main">A Title'
              b'</title></titleStmt></fileDesc></teiHeader><text><body><div><head>Introduction</head>'
              b'<p>We propose a method. It works.</p></div></body></text></TEI>')


@pytest.fixture
def grobid_stand_in():
    """A local http.server answering every POST with TEI_ANSWER; the
    multipart headers it received."""
    import http.server
    import threading

    received = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(body.split(b"\r\n\r\n", 1)[0])
            self.send_response(200)
            self.end_headers()
            self.wfile.write(TEI_ANSWER)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", received
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("stem", ["p" * 248, "q" * 251, 'odd "name"\r\nX-Header: 1'])
def test_long_pdf_name_through_grobid(tmp_path, grobid_stand_in, stem):
    import spacy

    from spacy_rhetoric import extensions as ext
    from spacy_rhetoric.readers.papers import read_paper

    url, received = grobid_stand_in
    pdf = tmp_path / f"{stem}.pdf"
    pdf.write_bytes(b"%PDF-1.4\n%stand-in\n")
    doc = read_paper(pdf, spacy.blank("en"), grobid=url)
    assert [s.text for s in doc.sents] == ["We propose a method.", "It works."]
    assert ext.get_doc_value(doc, ext.DOC_ID) == stem and ext.get_doc_value(doc, ext.TITLE) == "A Title"
    assert b"X-Header" not in received[0] and b'filename="paper.pdf"' in received[0]
