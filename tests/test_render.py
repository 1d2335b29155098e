"""HTML views (spacy_rhetoric.apps.render, ``spacy-rhetoric render`` / ``map``): the page
is self-contained, every sentence is an element with its label and scores, the
legend counts labels; the page loads in headless chromium (DOM checked);
alignment links; bad input is refused with a clear error."""
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
import spacy
from helpers import FOUR_LABELS as LABELS
from helpers import FOUR_PAPERS as PAPERS
from helpers import FOUR_SECTIONS as SECTIONS
from helpers import cli_text
from helpers import four_papers_pipeline as tiny_pipeline
from spacy.tokens import DocBin
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
from spacy_rhetoric import extensions as ext
from spacy_rhetoric.apps.alignment import align_encoded, encode_paper
from spacy_rhetoric.apps.render import render_alignment, render_paper, sentence_records
from spacy_rhetoric.cli import app, load_commands
from spacy_rhetoric.readers.common import doc_from_sentences, sentence_splitters

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Sentences(HTMLParser):
    """The attributes of every ``.rh-sent`` and ``.rh-legend-item`` element, and the body's."""

    def __init__(self):
        super().__init__()
        self.sents, self.legend, self.body, self.external = [], [], {}, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if "rh-sent" in classes:
            self.sents.append(attrs)
        if "rh-legend-item" in classes:
            self.legend.append(attrs)
        if tag == "body":
            self.body = attrs
        for key in ("src", "href"):
            if attrs.get(key) and not attrs[key].startswith("#"):
                self.external.append(attrs[key])
        if tag == "link":
            self.external.append(attrs.get("href"))


def parse(page: str) -> Sentences:
    parser = Sentences()
    parser.feed(page)
    return parser


@pytest.fixture(scope="module")
def nlp():
    return tiny_pipeline()


@pytest.fixture(scope="module")
def annotated(nlp):
    """PAPERS annotated by the tiny pipeline, with sections and paper ids."""
    docs = []
    for i, sents in enumerate(PAPERS):
        doc = doc_from_sentences(nlp, sents, sections=SECTIONS, doc_id=f"P{i}")
        with nlp.select_pipes(disable=sentence_splitters(nlp)):
            docs.append(nlp(doc))
    return docs


@pytest.fixture(scope="module")
def annotated_file(annotated, tmp_path_factory):
    path = tmp_path_factory.mktemp("render") / "annotated.spacy"
    db = DocBin(store_user_data=True)
    for doc in annotated[:2]:
        db.add(doc)
    db.to_disk(path)
    return path


@pytest.fixture(scope="module")
def model_dir(nlp, tmp_path_factory):
    path = tmp_path_factory.mktemp("render_model") / "pipeline"
    nlp.to_disk(path)
    return path


_CHROMIUM_FAILURE = []  # the reason of a failed install, so it is tried once per session


def chromium_binary():
    """chromium, installed with apt-get when missing (skip with the reason when
    that fails; one attempt per test session, at most 5 minutes)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if _CHROMIUM_FAILURE:
        pytest.skip(_CHROMIUM_FAILURE[0])
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        _CHROMIUM_FAILURE.append("chromium is not installed and cannot be installed here (needs root and apt-get)")
        pytest.skip(_CHROMIUM_FAILURE[0])
    try:
        subprocess.run(["apt-get", "install", "-y", "chromium"], check=True, capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError) as err:
        _CHROMIUM_FAILURE.append(f"chromium could not be installed: {err}")
        pytest.skip(_CHROMIUM_FAILURE[0])
    found = shutil.which("chromium")
    if not found:
        _CHROMIUM_FAILURE.append("apt-get install chromium gave no chromium binary")
        pytest.skip(_CHROMIUM_FAILURE[0])
    return found


def run_chromium(page_path, tmp_path, *args):
    binary = chromium_binary()
    cmd = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", *args,
           page_path.resolve().as_uri()]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


# -- the page ------------------------------------------------------------------------------------

def test_sentence_records_read_span_group(annotated):
    doc = annotated[0]
    records = sentence_records(doc)
    assert [r["text"] for r in records] == PAPERS[0]
    assert [r["label"] for r in records] == [s.label_ for s in doc.spans["rhetoric"]]
    assert [r["section"] for r in records] == SECTIONS
    assert all(set(r["scores"]) == set(LABELS) for r in records)


def test_render_paper_is_self_contained(annotated):
    page = render_paper(annotated[:2], title="Two papers")
    parsed = parse(page)
    assert len(parsed.sents) == 8 and parsed.external == []
    assert "http://" not in page and "https://" not in page
    labels = [s["data-label"] for s in parsed.sents]
    assert labels == [r["label"] for d in annotated[:2] for r in sentence_records(d)]
    assert [s["data-section"] for s in parsed.sents] == SECTIONS * 2
    assert set(json.loads(parsed.sents[0]["data-scores"])) == set(LABELS)
    counts = {item["data-label"]: 0 for item in parsed.legend}
    assert set(counts) == set(labels)
    assert page.count('<section class="rh-section"') == 6  # Introduction, Methods, Results per paper
    assert "<h2>Methods</h2>" in page and "<h1>P1</h1>" in page


def test_render_escapes_text_and_shows_unlabelled(nlp):
    doc = doc_from_sentences(nlp, ["A <b>bold</b> & \"quoted\" claim.", "Another one."],
                             labels=["result", None], sections=["Intro <x>", "Intro <x>"])
    page = render_paper(doc)
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    parsed = parse(page)
    assert [s.get("data-label") for s in parsed.sents] == ["result", None]
    assert {item["data-label"] for item in parsed.legend} == {"result", "unlabelled"}


def test_render_alignment_links(nlp, annotated):
    a = encode_paper(nlp, annotated[0], name="A")
    b = encode_paper(nlp, annotated[1], name="B")
    alignments = align_encoded(a, b, k=1)
    page = render_alignment(a, b, alignments)
    parsed = parse(page)
    ids = {s["id"] for s in parsed.sents}
    assert ids == {f"a-{i}" for i in range(4)} | {f"b-{i}" for i in range(4)}
    links = re.findall(r'href="#(b-\d+)"', page)
    assert len(links) == 4 and set(links) <= ids
    for sent in parsed.sents:
        if sent["id"].startswith("a-"):
            al = alignments[int(sent["id"][2:])]
            assert sent["data-targets"] == f"b-{al.b_index}"
    assert parsed.external == []


def test_page_in_headless_chromium(nlp, annotated, tmp_path):
    page_path = tmp_path / "paper.html"
    page_path.write_text(render_paper(annotated), encoding="utf8")
    dom = run_chromium(page_path, tmp_path, "--dump-dom")
    parsed = parse(dom)
    assert parsed.body.get("data-rh-ready") == "1"  # the inline script ran without error
    assert len(parsed.sents) == 16
    assert {s["data-label"] for s in parsed.sents} <= set(LABELS)
    assert len(parsed.legend) == len({s["data-label"] for s in parsed.sents})
    # hovering a sentence fills the tooltip (label, scores, section); hovering an aligned sentence marks its partner
    hover = ("<script>var s=document.querySelectorAll('.rh-sent')[2];"
             "s.dispatchEvent(new MouseEvent('mouseenter',{clientX:20,clientY:20}));</script></body>")
    page_path.write_text(render_paper(annotated).replace("</body>", hover), encoding="utf8")
    tip = re.search(r'<div id="rh-tip"[^>]*>(.*?)</div>', run_chromium(page_path, tmp_path, "--dump-dom"), re.S)
    assert tip and "hidden" not in tip.group(0).split(">")[0]
    third = sentence_records(annotated[0])[2]
    assert f"<b>{third['label']}</b>" in tip.group(1) and "section: Methods" in tip.group(1)
    assert all(label in tip.group(1) for label in LABELS) and tip.group(1).count("<tr>") == len(LABELS)
    a = encode_paper(nlp, annotated[0], name="A")
    b = encode_paper(nlp, annotated[1], name="B")
    alignments = align_encoded(a, b)
    page_path.write_text(render_alignment(a, b, alignments).replace(
        "</body>", hover.replace("[2]", "[0]")), encoding="utf8")
    hit = parse(run_chromium(page_path, tmp_path, "--dump-dom"))
    marked = [s["id"] for s in hit.sents if "rh-hit" in s["class"].split()]
    assert marked == [f"b-{alignments[0].b_index}"]
    page_path.write_text(render_paper(annotated), encoding="utf8")
    shot = tmp_path / "shot.png"
    run_chromium(page_path, tmp_path, f"--screenshot={shot}", "--window-size=900,600", "--hide-scrollbars")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- commands ------------------------------------------------------------------------------------

def test_cli_render(annotated_file, model_dir, tmp_path):
    load_commands()
    runner = CliRunner()
    out = tmp_path / "page.html"
    result = runner.invoke(app, ["render", str(annotated_file), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(parse(out.read_text(encoding="utf8")).sents) == 8
    paper = tmp_path / "paper.txt"
    paper.write_text("Introduction\n\n" + " ".join(PAPERS[2]) + "\n", encoding="utf8")
    result = runner.invoke(app, ["render", str(paper), "-o", str(out)])
    assert result.exit_code == 1 and "pass --model" in cli_text(result)
    result = runner.invoke(app, ["render", str(paper), "-o", str(out), "--model", str(model_dir)])
    assert result.exit_code == 0, result.output
    assert {s["data-label"] for s in parse(out.read_text(encoding="utf8")).sents} <= set(LABELS)
    # bad input: missing file, unlabelled .spacy, output = input, binary paper
    result = runner.invoke(app, ["render", str(tmp_path / "missing.spacy"), "-o", str(out)])
    assert result.exit_code == 1 and "paper not found" in cli_text(result)
    plain = tmp_path / "plain.spacy"
    DocBin(docs=[doc_from_sentences(spacy.blank("en"), PAPERS[0])]).to_disk(plain)
    result = runner.invoke(app, ["render", str(plain), "-o", str(out)])
    assert result.exit_code == 1 and "no sentence has a rhetoric label" in cli_text(result)
    result = runner.invoke(app, ["render", str(annotated_file), "-o", str(annotated_file)])
    assert result.exit_code == 1 and "same path as the input" in " ".join(result.output.split())
    binary = tmp_path / "paper.pdf"
    binary.write_bytes(b"%PDF\x00\x01")
    result = runner.invoke(app, ["render", str(binary), "-o", str(out), "--model", str(model_dir)])
    assert result.exit_code == 1 and "paper.pdf" in cli_text(result)


def test_cli_map(annotated_file, model_dir, tmp_path):
    load_commands()
    runner = CliRunner()
    out = tmp_path / "map.png"
    result = runner.invoke(app, ["map", str(annotated_file), "-o", str(out), "--max-points", "6", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "6 of 8 sentences" in cli_text(result) and out.read_bytes()[:4] == b"\x89PNG"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"paper_id": f"J{i}", "text": s}) + "\n"
                              for i, sents in enumerate(PAPERS) for s in sents), encoding="utf8")
    result = runner.invoke(app, ["map", str(corpus), "-o", str(out)])
    assert result.exit_code == 1 and "pass --model" in cli_text(result)
    result = runner.invoke(app, ["map", str(corpus), "-o", str(out), "--model", str(model_dir)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["map", str(corpus), "-o", str(tmp_path / "map.html"), "--model", str(model_dir)])
    assert result.exit_code == 1 and ".png" in cli_text(result)
    plain = tmp_path / "plain.spacy"
    DocBin(docs=[doc_from_sentences(spacy.blank("en"), PAPERS[0])]).to_disk(plain)
    result = runner.invoke(app, ["map", str(plain), "-o", str(out)])
    assert result.exit_code == 1 and "no sentence" in cli_text(result) and "encoder vector" in cli_text(result)
    result = runner.invoke(app, ["map", str(tmp_path / "nope"), "-o", str(out)])
    assert result.exit_code == 1 and "corpus not found" in cli_text(result)
    assert ext.VECTOR  # the vectors come from the store field of that name


def test_cli_align_html_hook(model_dir, tmp_path):
    load_commands()
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(PAPERS[0]) + "\n", encoding="utf8")
    b.write_text("\n".join(PAPERS[1][::-1]) + "\n", encoding="utf8")
    out = tmp_path / "align.html"
    result = CliRunner().invoke(app, ["align", str(a), str(b), "--model", str(model_dir), "--lines",
                                      "--html", str(out)])
    assert result.exit_code == 0, result.output
    parsed = parse(out.read_text(encoding="utf8"))
    assert len(parsed.sents) == 8 and parsed.external == []
    assert all(s["data-targets"].startswith("b-") for s in parsed.sents if s["id"].startswith("a-"))
    result = CliRunner().invoke(app, ["align", str(a), str(b), "--model", str(model_dir), "--html", str(a)])
    assert result.exit_code == 1 and "same path" in " ".join(result.output.split())


def test_render_shows_the_papers_own_headings_with_their_category(nlp):
    doc = doc_from_sentences(nlp, ["We study X.", "Nodes are papers.", "Edges are citations.", "We extract."],
                             labels=["objective", "method", "method", "method"],
                             sections=["introduction", "unknown", "unknown", "unknown"])
    sents = list(doc.sents)
    ext.set_span_values(doc, ext.HEADING, sents,
                        ["1 Introduction", "2.1 Node Types", "2.2 Edge Types", "3 Extracting Metadata"])
    page = render_paper(doc)
    # four headings of the paper, not two category names
    assert re.findall(r"<h2>([^<]*) <small", page) == [
        "1 Introduction", "2.1 Node Types", "2.2 Edge Types", "3 Extracting Metadata"]
    assert '<small class="rh-cat">[unknown]</small>' in page


def test_displacy_gets_a_colour_per_label():
    """displaCy's span view draws each label in its own colour with the
    exported options (without them every label is the same grey)."""
    import spacy
    from spacy import displacy

    from spacy_rhetoric import LABEL_COLORS, displacy_options
    from spacy_rhetoric.readers.common import doc_from_sentences

    nlp = spacy.blank("en")
    doc = doc_from_sentences(nlp, ["Parsing is old.", "We propose a parser."])
    doc.spans["rhetoric"] = [doc.char_span(0, 15, label="background"), doc.char_span(16, 36, label="objective")]
    html = displacy.render(doc, style="span", options=displacy_options(), jupyter=False)
    assert LABEL_COLORS["background"] in html and LABEL_COLORS["objective"] in html
    assert len({LABEL_COLORS[k] for k in ("background", "objective", "method", "result")}) == 4
    assert {"OWN", "CTR", "BAS", "Bac", "Background", "introduction"} <= set(LABEL_COLORS)
    assert displacy_options("sections", {"x": "#000000"})["colors"]["x"] == "#000000"
