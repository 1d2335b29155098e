"""``spacy-rhetoric annotate`` (spacy_rhetoric.apps.annotate): one record per
sentence of every paper format, preset sentence boundaries kept, offsets,
resume after an interruption, n_process / Dask equal to one process, bad
inputs and output paths."""
import json
import shutil
import sys

import pytest
import spacy
import srsly
from helpers import kill_then_rerun, save_tiny_pipeline, user_data_items
from spacy.language import Language
from spacy.tokens import DocBin
from spacy.vocab import Vocab
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401  (extensions, factories)
from spacy_rhetoric.apps.annotate import RECORD_FIELDS, AnnotateSettings, annotate_corpus
from spacy_rhetoric.cli import app, load_commands
from spacy_rhetoric.corpus_builder import CorpusBuildError
from spacy_rhetoric.io import PathError
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.readers.papers import read_paper

LABELS = ["background", "objective", "method", "result"]
SAMPLES = {  # one real file per format (paper-formats README)
    "tei.xml": "grobid-tei/N18-3011.tei.xml",
    "jats.nxml": "jats/pone.0000217.nxml",
    "s2orc.json": "s2orc/20190928/10045593.json",
}
NOTE = ("# A short note\n\n## Introduction\n\nParsing is an important step. We aim to parse long sentences "
        "quickly (Fig. 2 shows why).\n\n## Results\n\nOur results show a gain of four points.\n")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """blank + sentencizer + classifier + encoder, initialized with labels."""
    return save_tiny_pipeline(tmp_path_factory.mktemp("annotate_model") / "pipeline")


@pytest.fixture(scope="module")
def papers(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("annotate_papers") / "papers"
    root.mkdir()
    for name, rel in SAMPLES.items():
        shutil.copy(shared_data / "paper-formats" / rel, root / name)
    (root / "note.txt").write_text(NOTE, encoding="utf8")
    return root


def outputs(out_dir):
    """The JSONL text and the decoded Docs of a run, for equality checks."""
    docs = DocBin(store_user_data=True).from_disk(out_dir / "annotations.spacy").get_docs(Vocab())
    return ((out_dir / "annotations.jsonl").read_text(encoding="utf8"),
            [(d.text, user_data_items(d)) for d in docs])


def run(model_dir, papers, out, on_shard=None, **options):
    options = {"vectors": True, "spacy": True, "batch_size": 2, **options}
    return annotate_corpus(model_dir, [papers], out, AnnotateSettings(**options), on_shard=on_shard)


@pytest.fixture(scope="module")
def reference(model_dir, papers, tmp_path_factory):
    out = tmp_path_factory.mktemp("annotate_ref")
    return out, run(model_dir, papers, out)


def read_records(out_dir):
    return [json.loads(line) for line in (out_dir / "annotations.jsonl").open(encoding="utf8")]


def test_records_for_every_sentence_of_every_format(reference, papers, model_dir):
    out, summary = reference
    assert summary["inputs"] == summary["inputs_annotated"] == 4 and summary["inputs_skipped"] == 0
    records = read_records(out)
    assert summary["sentences"] == len(records) and summary["papers"] == 4
    nlp = spacy.blank("en")
    by_input = {}
    for rec in records:
        by_input.setdefault(rec["input"], []).append(rec)
    assert sorted(by_input) == ["jats.nxml", "note.txt", "s2orc.json", "tei.xml"]
    for name, recs in by_input.items():
        doc = read_paper(papers / name, nlp)  # the reader's (preset) sentences, unchanged by the pipeline
        sents = list(doc.sents)
        assert [r["index"] for r in recs] == list(range(len(sents)))
        assert [r["text"] for r in recs] == [s.text for s in sents]
        assert [r["heading"] for r in recs] == [s._.rhetoric_heading for s in sents]
        assert [r["paragraph"] for r in recs] == [s._.rhetoric_paragraph for s in sents]
        assert {r["paper_id"] for r in recs} == {doc._.rhetoric_doc_id}
        for rec in recs:
            assert set(RECORD_FIELDS) | {"vector", "input"} == set(rec)
            assert doc.text[rec["start_char"]:rec["end_char"]] == rec["text"]
            if rec["text"].strip():
                assert rec["label"] in LABELS and abs(sum(rec["scores"].values()) - 1.0) < 1e-4
                assert len(rec["vector"]) > 0
    # the .spacy output: the annotated Docs, offsets slice their text
    docs = list(DocBin(store_user_data=True).from_disk(out / "annotations.spacy").get_docs(nlp.vocab))
    assert len(docs) == 4
    texts = {(d._.rhetoric_doc_id, d.text) for d in docs}
    for rec in records[:50]:
        doc_text = next(t for i, t in texts if i == rec["paper_id"])
        assert doc_text[rec["start_char"]:rec["end_char"]] == rec["text"]
    assert all(s._.rhetoric_label in LABELS for d in docs for s in d.sents if s.text.strip())


def test_resume_after_interruption(model_dir, papers, reference, tmp_path):
    out = tmp_path / "out"
    seen = []

    class Stop(Exception):
        pass

    def stop_after_2(inp, header):
        seen.append(inp.key)
        if len(seen) == 2:
            raise Stop()

    with pytest.raises(Stop):
        run(model_dir, papers, out, on_shard=stop_after_2)
    assert len(list((out / "shards").glob("*.jsonl"))) == 2
    assert not (out / "annotations.jsonl").exists()
    (out / "shards" / ".tmp-junk.jsonl.123").write_text("{broken")  # left by a killed writer
    summary = run(model_dir, papers, out)
    assert summary["inputs_resumed"] == 2 and summary["inputs_annotated_this_run"] == 2
    assert outputs(out) == outputs(reference[0])
    assert not list((out / "shards").glob(".tmp-*"))
    again = run(model_dir, papers, out)
    assert again["inputs_annotated_this_run"] == 0 and outputs(out) == outputs(reference[0])
    with pytest.raises(CorpusBuildError, match="different settings"):
        run(model_dir, papers, out, vectors=False)


@pytest.mark.slow
def test_killed_subprocess_resumes(model_dir, papers, reference, tmp_path):
    """SIGKILL a real CLI process mid-run, rerun: same output as uninterrupted."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "spacy_rhetoric", "annotate", str(model_dir), str(papers), "-o", str(out),
           "--vectors", "--spacy", "--batch-size", "2"]
    killed, n_before, result = kill_then_rerun(cmd, out / "shards", min_shards=1)
    assert n_before >= 1
    assert result.returncode == 0, result.stderr[-2000:]
    summary = srsly.read_json(out / "summary.json")
    if killed:
        assert summary["inputs_resumed"] == n_before and n_before < 4
    assert outputs(out) == outputs(reference[0])


def test_edited_input_is_annotated_again(model_dir, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(NOTE, encoding="utf8")
    run(model_dir, src, tmp_path / "out")
    (src / "a.txt").write_text(NOTE + "\nOne more sentence here.\n", encoding="utf8")
    summary = run(model_dir, src, tmp_path / "out")
    assert summary["inputs_annotated_this_run"] == 1
    assert len(list((tmp_path / "out" / "shards").glob("*.jsonl"))) == 1
    assert read_records(tmp_path / "out")[-1]["text"] == "One more sentence here."


@pytest.mark.slow
def test_n_process_2_equals_1(model_dir, papers, reference, tmp_path):
    run(model_dir, papers, tmp_path / "np2", n_process=2)
    assert outputs(tmp_path / "np2") == outputs(reference[0])


@pytest.mark.slow
def test_n_process_workers_do_not_warn_about_hooks(model_dir, papers, tmp_path):
    """The workers' docs lose the encoder's sent.vector hooks, which annotate
    does not use: no W109 from them (in a fresh process: pytest would record
    the workers' warnings)."""
    import subprocess

    code = ("import sys; from spacy_rhetoric.apps.annotate import AnnotateSettings, annotate_corpus; "
            "annotate_corpus(sys.argv[1], [sys.argv[2]], sys.argv[3], AnnotateSettings(batch_size=2, n_process=2))")
    done = subprocess.run([sys.executable, "-c", code, str(model_dir), str(papers), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "annotations.jsonl").exists()
    assert "W109" not in done.stderr


@pytest.mark.slow
def test_dask_local_cluster_equals_single_process(model_dir, papers, reference, tmp_path):
    pytest.importorskip("distributed")
    summary = run(model_dir, papers, tmp_path / "dask", scheduler="local", workers=2)
    assert summary["inputs_annotated_this_run"] == 4
    assert outputs(tmp_path / "dask") == outputs(reference[0])


def test_format_override_and_spacy_input(model_dir, papers, tmp_path):
    summary = run(model_dir, papers, tmp_path / "text", fmt="text")
    assert summary["inputs"] == 1 and read_records(tmp_path / "text")[0]["input"] == "note.txt"
    # a CL-SciSumm reference paper (detected by content): its sentences and sids
    (tmp_path / "P99-1001.xml").write_text(
        '<PAPER>\n<S sid="0">A Title</S>\n<ABSTRACT>\n<S sid="1" ssid="1">We parse fast.</S>\n</ABSTRACT>\n'
        '<SECTION title="1 Introduction" number="1">\n<S sid="2" ssid="1">Parsing is slow, e.g. in Fig. 1.</S>\n'
        '</SECTION>\n</PAPER>\n', encoding="utf8")
    annotate_corpus(model_dir, [tmp_path / "P99-1001.xml"], tmp_path / "cl")
    assert [(r["sid"], r["heading"], r["text"]) for r in read_records(tmp_path / "cl")] == [
        ("1", "Abstract", "We parse fast."), ("2", "1 Introduction", "Parsing is slow, e.g. in Fig. 1.")]
    # a .spacy input: its Docs, their boundaries and ids kept
    nlp = spacy.blank("en")
    db = DocBin(store_user_data=True)
    db.add(doc_from_sentences(nlp, ["First sentence here.", "Second one, Fig. 2 shows it."], doc_id="P1"))
    db.add(nlp.make_doc("No boundaries. Split by the sentencizer."))
    db.to_disk(tmp_path / "docs.spacy")
    annotate_corpus(model_dir, [tmp_path / "docs.spacy"], tmp_path / "sp")
    recs = read_records(tmp_path / "sp")
    assert [(r["paper_id"], r["text"]) for r in recs] == [
        ("P1", "First sentence here."), ("P1", "Second one, Fig. 2 shows it."),
        ("docs:1", "No boundaries."), ("docs:1", "Split by the sentencizer.")]


def test_pipeline_that_resplits_sentences_is_an_error(papers, tmp_path):
    @Language.component("test_annotate_resplit")
    def resplit(doc):
        for token in doc:
            token.is_sent_start = True
        return doc

    nlp = spacy.blank("en")
    nlp.add_pipe("test_annotate_resplit")
    nlp.to_disk(tmp_path / "resplit")
    with pytest.raises(CorpusBuildError, match="changed its preset sentence boundaries"):
        annotate_corpus(tmp_path / "resplit", [papers / "note.txt"], tmp_path / "out")


def test_unreadable_files_skipped_and_counted(model_dir, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "good.txt").write_text(NOTE, encoding="utf8")
    (src / "binary.bin").write_bytes(b"\x00\x01\x02 binary")
    (src / "broken.xml").write_text("<TEI><text><body><div><p>unclosed", encoding="utf8")
    (src / ".hidden.txt").write_text(NOTE, encoding="utf8")
    summary = annotate_corpus(model_dir, [src], tmp_path / "out")
    assert summary["inputs"] == 3 and summary["inputs_annotated"] == 1 and summary["inputs_skipped"] == 2
    reasons = " ".join(s["reason"] for s in summary["skipped"])
    assert "binary.bin" in reasons and "broken.xml" in reasons
    assert srsly.read_json(tmp_path / "out" / "summary.json")["inputs_skipped"] == 2
    # the output folder inside the input folder is never read back
    inside = src / "annotated"
    first = annotate_corpus(model_dir, [src], inside)
    again = annotate_corpus(model_dir, [src], inside)
    assert first["inputs"] == again["inputs"] == 3 and again["inputs_annotated_this_run"] == 0


def test_bad_inputs_and_outputs_are_clear_errors(model_dir, papers, tmp_path):
    with pytest.raises(PathError, match="input not found"):
        annotate_corpus(model_dir, [tmp_path / "missing"], tmp_path / "out")
    with pytest.raises(PathError, match="pipeline"):
        annotate_corpus(papers / "note.txt", [papers], tmp_path / "out")
    with pytest.raises(CorpusBuildError, match="cannot load pipeline"):
        annotate_corpus("no_such_pipeline_package", [papers], tmp_path / "out")
    (tmp_path / "file").write_text("x")
    with pytest.raises(PathError, match="existing file"):
        annotate_corpus(model_dir, [papers], tmp_path / "file")
    (tmp_path / "o2" / "annotations.jsonl").mkdir(parents=True)
    with pytest.raises(CorpusBuildError, match="existing directory"):
        annotate_corpus(model_dir, [papers], tmp_path / "o2")
    with pytest.raises(CorpusBuildError, match="nothing to write"):
        annotate_corpus(model_dir, [papers], tmp_path / "o3", AnnotateSettings(jsonl=False))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "a.bin").write_bytes(b"\x00")
    with pytest.raises(CorpusBuildError, match="none of the 1 inputs is usable.*a.bin"):
        annotate_corpus(model_dir, [empty], tmp_path / "o4")
    assert not (tmp_path / "o4" / "annotations.jsonl").exists()


def test_cli(model_dir, papers, tmp_path):
    load_commands()
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(app, ["annotate", str(model_dir), str(papers / "note.txt"), "-o", str(out), "--spacy"])
    assert result.exit_code == 0, result.output
    assert (out / "annotations.jsonl").exists() and (out / "annotations.spacy").exists()
    assert "vector" not in read_records(out)[0]
    result = runner.invoke(app, ["annotate", str(model_dir), str(tmp_path / "missing"), "-o", str(out)])
    assert result.exit_code == 1 and "input not found" in result.output
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.bin").write_bytes(b"\x00")
    result = runner.invoke(app, ["annotate", str(model_dir), str(bad), "-o", str(tmp_path / "o2")])
    assert result.exit_code == 1 and "none of the 1 inputs is usable" in result.output
    result = runner.invoke(app, ["annotate", str(model_dir), str(papers), "-o", str(out), "--format", "docx"])
    assert result.exit_code == 2 and "unknown format" in result.output
    result = runner.invoke(app, ["annotate", str(model_dir), str(papers), "-o", str(out), "--n-process", "0"])
    assert result.exit_code == 2
