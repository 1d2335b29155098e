"""The default pipeline as users get it (conftest.py ``demo_like_pipeline``:
the demo's shape, written by the demo's own code) through every command and
API that takes a pipeline: annotate with two processes, nlp.pipe with two
processes, index (two processes), search, align, map, render. Packaging
and the offline load of the wheel: tests/test_package.py."""
import json

import numpy
import pytest
import spacy
from helpers import cli_text
from typer.testing import CliRunner

import spacy_rhetoric
from spacy_rhetoric.cli import app, load_commands
from spacy_rhetoric.resources import asset_path

pytestmark = pytest.mark.slow

SECOND = """# A second paper on parsing

Abstract

Parsing news text is a well-studied task. We propose a chart pruning method for the parser.

1 Introduction

Many parsers have been proposed for news text. In this paper we prune the chart.

2 Method

We train a linear model on the treebank. The model predicts which cells to keep.

3 Results

Our results show a gain of four points in speed. Accuracy stays the same.
"""


@pytest.fixture(scope="module")
def papers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("papers")
    (folder / "sample.txt").write_text(asset_path("sample_paper.txt").read_text(encoding="utf8"), encoding="utf8")
    (folder / "second.txt").write_text(SECOND, encoding="utf8")
    return folder


def run(*args):
    load_commands()
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, cli_text(result)


def records(out):
    return [json.loads(line) for line in (out / "annotations.jsonl").read_text(encoding="utf8").splitlines()]


def test_annotate_with_two_processes_gives_what_one_gives(demo_like_pipeline, papers, tmp_path):
    code, text = run("annotate", demo_like_pipeline, papers, "-o", tmp_path / "one", "--vectors")
    assert code == 0, text
    code, text = run("annotate", demo_like_pipeline, papers, "-o", tmp_path / "two", "--vectors",
                     "--n-process", "2")
    assert code == 0, text
    one, two = records(tmp_path / "one"), records(tmp_path / "two")
    assert len(one) > 20 and {r["paper_id"] for r in one} == {"sample", "second"}
    assert [(r["paper_id"], r["text"], r["label"], r["section"]) for r in two] == \
        [(r["paper_id"], r["text"], r["label"], r["section"]) for r in one]
    assert all(r["label"] and r["vector"] for r in one)
    numpy.testing.assert_allclose([r["vector"] for r in two], [r["vector"] for r in one], atol=1e-5)
    # the sections come from the paper's headings
    assert {r["section"] for r in one} >= {"abstract", "introduction"}


def test_nlp_pipe_with_two_processes(demo_like_pipeline):
    nlp = spacy.load(demo_like_pipeline)
    texts = ["Parsing news text is a well-studied task. We propose a chart pruning method.",
             "Our results show a gain of four points. Accuracy stays the same."] * 2
    one = [[(s.text, s._.rhetoric_label) for s in d.sents] for d in nlp.pipe(texts)]
    docs = spacy_rhetoric.restore_vector_hooks(list(nlp.pipe(texts, n_process=2, batch_size=1)))
    assert [[(s.text, s._.rhetoric_label) for s in d.sents] for d in docs] == one
    first, second = list(docs[0].sents)
    assert first.similarity(second) == pytest.approx(float(first._.rhetoric_vector @ second._.rhetoric_vector),
                                                     abs=1e-5)


def test_read_paper_then_nlp_gives_sections(demo_like_pipeline, papers):
    nlp = spacy.load(demo_like_pipeline)
    doc = nlp(spacy_rhetoric.read_paper(papers / "second.txt", nlp))
    sections = [s._.rhetoric_section for s in doc.sents]
    assert doc._.rhetoric_title == "A second paper on parsing"
    assert sections[:2] == ["abstract", "abstract"] and "method" in sections and "results" in sections
    assert all(s._.rhetoric_label and s._.rhetoric_vector is not None for s in doc.sents)
    assert not any("1 Introduction" in s.text for s in doc.sents)  # headings are no sentence's text


def test_index_search_align_map_render(demo_like_pipeline, papers, tmp_path):
    code, text = run("index", demo_like_pipeline, papers, "-o", tmp_path / "idx", "--n-process", "2")
    assert code == 0, text
    code, text = run("search", tmp_path / "idx", "We propose a new method.", "--json", "-k", "3")
    assert code == 0, text
    assert text.count('"score"') == 3
    code, text = run("search", tmp_path / "idx", "We propose a new method.", "--label", "objectve")
    assert code == 1 and "--label 'objectve'" in text and "background" in text
    code, text = run("align", papers / "sample.txt", papers / "second.txt", "--model", demo_like_pipeline,
                     "-o", tmp_path / "align.jsonl")
    assert code == 0, text
    pairs = [json.loads(line) for line in (tmp_path / "align.jsonl").read_text(encoding="utf8").splitlines()]
    assert len(pairs) > 10 and all(-1.0 <= p["score"] <= 1.0 + 1e-5 for p in pairs)
    code, text = run("map", papers, "--model", demo_like_pipeline, "-o", tmp_path / "map.png")
    assert code == 0, text
    assert (tmp_path / "map.png").read_bytes()[:4] == b"\x89PNG"
    code, text = run("render", papers / "sample.txt", "--model", demo_like_pipeline, "-o", tmp_path / "p.html")
    assert code == 0, text
    assert "rh-sent" in (tmp_path / "p.html").read_text(encoding="utf8")
