"""Sentence search (spacy_rhetoric.search, ``spacy-rhetoric index`` / ``search``):
index -> search finds an indexed sentence's own entry first, filters, metadata
round trip, resumable build without duplicates, corpus formats, bad input."""
import json
import sqlite3

import numpy
import pytest
import spacy
from helpers import FOUR_LABELS as LABELS
from helpers import FOUR_PAPERS as PAPERS
from helpers import FOUR_SECTIONS as SECTIONS
from helpers import four_papers_pipeline as tiny_pipeline
from spacy.tokens import DocBin
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
from spacy_rhetoric.cli import app, load_commands
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.search import (
    CONFIG_FILE,
    INDEX_FILE,
    META_FILE,
    RhetoricIndex,
    SearchIndexError,
    build_index,
    faiss_search,
    index_factory_for,
    make_index,
    not_for_vectors,
    selector_params,
    work_dir,
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("search_model") / "pipeline"
    tiny_pipeline().to_disk(path)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """PAPERS as a .spacy file (gold labels, sections, doc ids)."""
    path = tmp_path_factory.mktemp("search_corpus") / "papers.spacy"
    nlp = spacy.blank("en")
    db = DocBin(store_user_data=True)
    for i, sents in enumerate(PAPERS):
        db.add(doc_from_sentences(nlp, sents, labels=LABELS, sections=SECTIONS, doc_id=f"P{i}"))
    db.to_disk(path)
    return path


@pytest.fixture(scope="module")
def built(model_dir, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("search_index") / "corpus.index"
    summary = build_index(model_dir, [corpus], out, part_sentences=5, progress=False)
    return out, summary


def test_index_then_search_finds_own_entry(built):
    path, summary = built
    assert summary["finished"] and summary["n"] == 16 and summary["factory"] == "Flat"
    assert {p.name for p in path.iterdir()} == {INDEX_FILE, META_FILE, CONFIG_FILE}
    assert not work_dir(path).exists()
    index = RhetoricIndex.load(path)
    assert len(index) == 16
    for i in range(len(index)):
        record = index.record(i)
        by_vector = index.search(index.vector(i), k=3)
        assert by_vector[0].id == i and by_vector[0].score == pytest.approx(1.0, abs=1e-4)
        by_text = index.search(record.text, k=3)
        assert by_text[0].text == record.text


def test_queries_run_the_encoder_only(built):
    index = RhetoricIndex.load(built[0])
    assert not_for_vectors(index.nlp) == ["sentencizer", "rhetoric_function_classifier"]
    vector = index.encode(PAPERS[0][0])
    assert vector.shape == (1, index.index.d) and abs(float(numpy.linalg.norm(vector)) - 1) < 1e-4


def test_metadata_round_trip(built, model_dir):
    path, _ = built
    index = RhetoricIndex.load(path)
    hits = [index.record(i) for i in range(len(index))]
    assert [h.text for h in hits] == [s for sents in PAPERS for s in sents]
    assert [h.paper for h in hits] == [f"P{i}" for i in range(4) for _ in range(4)]
    assert [h.sent_index for h in hits] == list(range(4)) * 4
    assert [h.section for h in hits] == SECTIONS * 4
    assert [h.gold_label for h in hits] == LABELS * 4
    assert all(h.label in LABELS and set(h.scores) == set(LABELS) for h in hits)
    assert abs(sum(hits[0].scores.values()) - 1) < 1e-4
    config = json.loads((path / CONFIG_FILE).read_text())
    assert config["pipeline"] == str(model_dir.resolve())
    assert config["n"] == 16 and config["pipeline_meta"]["components"][-1] == "rhetoric_sentence_encoder"
    assert config["dim"] == index.index.d
    # the store is plain SQLite (no pickle)
    con = sqlite3.connect(path / META_FILE)
    assert con.execute("SELECT COUNT(DISTINCT id), MIN(id), MAX(id) FROM sentences").fetchone() == (16, 0, 15)


def test_filters(built, monkeypatch):
    index = RhetoricIndex.load(path := built[0])
    query = "We propose a copy mechanism for the decoder."
    assert {h.paper for h in index.search(query, k=10, paper="P2")} == {"P2"}
    assert len(index.search(query, k=10, paper="P2")) == 4
    assert {h.section for h in index.search(query, k=10, section="results")} == {"Results"}
    predicted = index.record(5).label
    hits = index.search(query, k=16, label=predicted)
    assert hits and {h.label for h in hits} == {predicted}
    both = index.search(query, k=16, section="Introduction", paper="P1")
    assert [(h.paper, h.section) for h in both] == [("P1", "Introduction")] * 2
    # a value no sentence has is a typo: one line listing what the index has
    with pytest.raises(SearchIndexError, match=r"--paper 'nope': no indexed sentence has it; the index has P0, P1, P2, P3"):
        index.search(query, paper="nope")
    with pytest.raises(SearchIndexError, match=r"--label 'objectve'.*the index has .*" + predicted):
        index.search(query, label="objectve")
    with pytest.raises(SearchIndexError, match=r"--section 'methodz'.*Introduction, Methods, Results"):
        index.search(query, section="methodz", paper="P1")
    assert {h.label for h in index.search(query, k=16, label=predicted.upper())} == {predicted}
    # the faiss selector path gives the same hits as the exact subset path (the constant is read
    # where the search runs: patching the package's re-exported copy would test nothing)
    import spacy_rhetoric.search.faiss_index as faiss_mod

    exact = [h.id for h in index.search(query, k=3, section="Methods")]
    calls = []
    real_params = faiss_mod.selector_params
    monkeypatch.setattr(faiss_mod, "SUBSET_EXACT_MAX", 0)
    monkeypatch.setattr(faiss_mod, "selector_params", lambda *a: calls.append(1) or real_params(*a))
    assert [h.id for h in index.search(query, k=3, section="Methods")] == exact
    assert calls, "the filtered search did not take the faiss selector path"
    assert path.exists()


def test_interrupted_build_resumes_without_duplicates(model_dir, corpus, tmp_path):
    out = tmp_path / "idx"
    first = build_index(model_dir, [corpus], out, part_sentences=4, progress=False, stop_after_parts=2)
    assert first["finished"] is False and not out.exists() and work_dir(out).is_dir()
    # a half-written part (vectors saved, rows not committed) is redone, not duplicated
    (work_dir(out) / "vectors" / "part-000002.npy").write_bytes(b"garbage")
    second = build_index(model_dir, [corpus], out, part_sentences=4, progress=False)
    assert second["resumed"] and second["parts_reused"] == 2 and second["parts_encoded"] == 2
    index = RhetoricIndex.load(out)
    texts = [index.record(i).text for i in range(len(index))]
    assert sorted(texts) == sorted(s for sents in PAPERS for s in sents)
    assert not work_dir(out).exists()
    # a resume with other settings is refused unless --overwrite
    build_index(model_dir, [corpus], out, part_sentences=4, progress=False, stop_after_parts=1)
    with pytest.raises(SearchIndexError, match="other inputs"):
        build_index(model_dir, [corpus], out, part_sentences=3, progress=False)
    again = build_index(model_dir, [corpus], out, part_sentences=3, progress=False, overwrite=True)
    assert again["n"] == 16 and not again["resumed"]


def test_jsonl_and_paper_folder_inputs(model_dir, tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "a.txt").write_text("Introduction\n\n" + " ".join(PAPERS[0]) + "\n", encoding="utf8")
    (folder / "bad.bin").write_bytes(b"\x00\x01binary")
    records = [{"paper_id": f"J{i}", "text": s, "label": lab, "section": "Abstract"}
               for i, sents in enumerate(PAPERS[1:3]) for s, lab in zip(sents, LABELS)]
    lines = [json.dumps(r) for r in records] + ["{not json", json.dumps({"paper_id": "J9"})]
    (folder / "label.jsonl").write_text("\n".join(lines) + "\n", encoding="utf8")
    summary = build_index(model_dir, [folder], tmp_path / "idx", progress=False)
    assert summary["files_skipped"] == 3  # the binary file, the bad JSON line, the line without text
    index = RhetoricIndex.load(tmp_path / "idx")
    papers = {index.record(i).paper for i in range(len(index))}
    assert papers == {"a", "J0", "J1"}
    assert index.search(PAPERS[1][2], k=1, paper="J0")[0].gold_label == "method"
    # --section matches words of a raw heading too ("intro" ~ "Introduction", not "Abstract")
    hits = index.search(PAPERS[0][0], k=10, section="intro")
    assert hits and {(h.paper, h.heading) for h in hits} == {("a", "Introduction")}


def test_index_types_and_factory_override():
    rng = numpy.random.default_rng(0)
    X = rng.normal(size=(1000, 16)).astype("float32")
    X /= numpy.linalg.norm(X, axis=1, keepdims=True)
    assert index_factory_for(10)[0] == "Flat"
    assert index_factory_for(10 ** 6)[0] == "IVF1000,PQ96x4fs,RFlat"
    assert index_factory_for(10 ** 6, "hnsw")[0].startswith("HNSW")
    for kind in ("hnsw", "ivfpq"):
        factory, _ = index_factory_for(len(X), kind, dim=16)
        index = make_index(X, factory)
        assert index.ntotal == len(X)
        _, ids = index.search(X[:5], 1)
        assert list(ids[:, 0]) == list(range(5))
        allowed = numpy.arange(1, len(X), 3)
        _, ids = faiss_search(index, X[:5], 4, params=selector_params(index, allowed, 4))
        assert set(ids.ravel()) <= set(allowed) and ids[1, 0] == 1


def test_bad_input(model_dir, corpus, tmp_path):
    with pytest.raises(ValueError, match="not found"):
        build_index(model_dir, [tmp_path / "missing.spacy"], tmp_path / "idx", progress=False)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine", encoding="utf8")
    with pytest.raises(ValueError, match="not a spacy-rhetoric index"):
        build_index(model_dir, [corpus], other, progress=False)
    with pytest.raises(SearchIndexError, match="cannot load pipeline"):
        build_index(tmp_path / "no-model", [corpus], tmp_path / "idx", progress=False)
    no_encoder = spacy.blank("en")
    no_encoder.add_pipe("sentencizer")
    no_encoder.to_disk(tmp_path / "blank")
    with pytest.raises(SearchIndexError, match="sets no sentence vectors"):
        build_index(tmp_path / "blank", [corpus], tmp_path / "idx", progress=False)
    with pytest.raises(SearchIndexError, match="index_factory"):
        build_index(model_dir, [corpus], tmp_path / "idx", index_type="IVFxyz", progress=False)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("{\"text\": \"  \"}\n", encoding="utf8")
    with pytest.raises(SearchIndexError, match="nothing to index"):
        build_index(model_dir, [empty], tmp_path / "idx", progress=False)
    with pytest.raises(ValueError, match="is missing"):
        RhetoricIndex.load(other)


def test_cli_index_and_search(model_dir, corpus, tmp_path):
    load_commands()
    runner = CliRunner()
    out = tmp_path / "cli.index"
    result = runner.invoke(app, ["index", str(model_dir), str(corpus), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "16 sentences of 4 papers indexed" in result.output
    result = runner.invoke(app, ["search", str(out), PAPERS[0][2], "-k", "2", "--json"])
    assert result.exit_code == 0, result.output
    hits = [json.loads(line) for line in result.output.strip().splitlines()]
    assert len(hits) == 2 and hits[0]["text"] == PAPERS[0][2] and hits[0]["paper"] == "P0"
    result = runner.invoke(app, ["search", str(out), PAPERS[0][2], "--section", "Methods"])
    assert result.exit_code == 0 and "Methods" in result.output and "Results" not in result.output
    result = runner.invoke(app, ["search", str(tmp_path / "nope"), "query"])
    assert result.exit_code == 1 and "index not found" in result.output
    result = runner.invoke(app, ["index", str(model_dir), str(tmp_path / "nope.spacy"), "-o", str(out)])
    assert result.exit_code == 1 and "corpus not found" in result.output


@pytest.mark.slow
def test_dask_local_cluster_build(model_dir, corpus, tmp_path):
    out = tmp_path / "dask.index"
    summary = build_index(model_dir, [corpus], out, part_sentences=4, progress=False, scheduler="local", workers=2)
    assert summary["n"] == 16 and summary["parts_encoded"] == 4
    index = RhetoricIndex.load(out)
    assert sorted(index.record(i).text for i in range(16)) == sorted(s for p in PAPERS for s in p)


@pytest.mark.slow
def test_killed_build_resumes_without_duplicates(model_dir, tmp_path):
    """SIGKILL a real `spacy-rhetoric index` run after some parts are committed; the rerun
    completes the index with every sentence exactly once."""
    import os
    import signal
    import subprocess
    import sys
    import time

    corpus = tmp_path / "many.jsonl"
    lines = [json.dumps({"paper_id": f"M{i}", "text": f"{s[:-1]} number {i}."})
             for i in range(150) for s in PAPERS[i % 4]]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf8")
    out = tmp_path / "killed.index"
    cmd = [sys.executable, "-m", "spacy_rhetoric", "index", str(model_dir), str(corpus), "-o", str(out),
           "--part-sentences", "4"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, OMP_NUM_THREADS="1"))
    meta = work_dir(out) / META_FILE
    deadline = time.time() + 120
    n_parts = 0
    while time.time() < deadline and proc.poll() is None:
        if meta.exists():
            try:
                n_parts = sqlite3.connect(meta, timeout=0.1).execute("SELECT COUNT(*) FROM parts").fetchone()[0]
            except sqlite3.Error:
                n_parts = 0
            if n_parts >= 5:
                break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if proc.returncode != -signal.SIGKILL or out.exists():
        pytest.skip("the build finished before it could be killed")
    assert not out.exists() and work_dir(out).is_dir()
    summary = build_index(model_dir, [corpus], out, part_sentences=4, progress=False)
    assert summary["resumed"] and summary["parts_reused"] >= 5
    index = RhetoricIndex.load(out)
    texts = [index.record(i).text for i in range(len(index))]
    assert len(texts) == len(set(texts)) == 600


def test_filtered_search_survives_faiss_torch_utils(built, monkeypatch):
    """pytorch-metric-learning imports faiss.contrib.torch_utils, which patches
    Index.search for the whole process; filtered search must still work."""
    pytest.importorskip("faiss.contrib.torch_utils")
    import faiss.contrib.torch_utils  # noqa: F401

    test_filters(built, monkeypatch)


def test_index_with_two_processes_gives_the_same_index(built, model_dir, corpus, tmp_path):
    """--n-process 2: each part's nlp.pipe in two forked workers; the same
    rows and vectors as one process."""
    one = RhetoricIndex.load(built[0])
    summary = build_index(model_dir, [corpus], tmp_path / "two.index", part_sentences=5, n_process=2,
                          progress=False)
    two = RhetoricIndex.load(tmp_path / "two.index")
    assert summary["n"] == len(one) == len(two) == 16
    assert [two.record(i).text for i in range(16)] == [one.record(i).text for i in range(16)]
    numpy.testing.assert_allclose(two.index.reconstruct_n(0, 16), one.index.reconstruct_n(0, 16), atol=1e-5)
