"""The distant-supervision corpus builder (``spacy_rhetoric.corpus_builder``, ``spacy-rhetoric label``)."""
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy
import pytest
import srsly
from helpers import cli_text, kill_then_rerun, user_data_items
from spacy.tokens import DocBin
from spacy.vocab import Vocab

import spacy_rhetoric
from spacy_rhetoric.corpus_builder import BuildSettings, CorpusBuildError, build_corpus, normalise_text, valid_papers
from spacy_rhetoric.jobs import JobError, discover_inputs, import_distributed
from spacy_rhetoric.jobs.settings import import_code
from spacy_rhetoric.pipeline.single_sentence import sentence_doc
from spacy_rhetoric.readers.splits import split_doc_ids

PHRASES = [
    ("Showing the aim of the paper", "in this paper we propose a new method"),
    ("Reference to tables or figures", "table 2 shows the results of"),
    ("Showing the outline of the paper", "the rest of the paper is organized as follows"),
    ("Suggestion of future work", "in future work we plan to"),
    ("Comparison of the results", "our system outperforms the baseline"),
    ("Showing what is already done in the past work", "these models have been applied to many tasks"),
]

SENTENCES = [
    "In this paper we propose a new method for parsing {t}.",
    "Table 2 shows the results of the {t} experiments.",
    "The rest of the paper is organized as follows.",
    "In future work we plan to extend the {t} model.",
    "Our system outperforms the baseline by a wide margin on {t}.",
    "Neural models have been applied to {t} before.",
    "The weather was nice when we collected the {t} data.",
    "We thank the anonymous reviewers.",
]
TOPICS = ["tagging", "chunking", "summarization", "translation", "retrieval",
          "segmentation", "generation", "coreference", "alignment", "entailment",
          "questions", "dialogue"]


def _xml(paper_title: str, sentences) -> str:
    body = "\n".join(f'    <S sid ="{i + 1}" ssid = "{i + 1}">{s}</S>' for i, s in enumerate(sentences))
    return (f'<PAPER>\n<S sid="0">{paper_title}</S>\n<ABSTRACT>\n{body}\n</ABSTRACT>\n'
            f'<SECTION title="Introduction" number="1">\n<S sid ="99" ssid = "1">We study {paper_title}.</S>\n'
            f'</SECTION>\n</PAPER>\n')


def make_corpus(root: Path, n_papers: int = 12) -> Path:
    """``n_papers`` reference XMLs in the CL-SciSumm layout; every paper
    shares "The rest of the paper is organized as follows." (a duplicate)."""
    for i in range(n_papers):
        topic = TOPICS[i % len(TOPICS)]
        pid = f"P{i:02d}-10{i:02d}"
        d = root / pid / "Reference_XML"
        d.mkdir(parents=True)
        sents = [s.format(t=topic) for s in SENTENCES[: 4 + (i % 5)]]
        (d / f"{pid}.xml").write_text(_xml(f"Paper about {topic}", sents), encoding="utf8")
    return root


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))


def outputs(out_dir: Path):
    """Everything a build produced, for equality checks (DocBins as bytes of
    their decoded content)."""
    res = {}
    for name in ("train", "valid"):
        res[f"{name}.jsonl"] = (out_dir / f"{name}.jsonl").read_text(encoding="utf8")
        docs = list(DocBin(store_user_data=True).from_disk(out_dir / f"{name}.spacy").get_docs(Vocab()))
        res[f"{name}.spacy"] = [(d.text, user_data_items(d)) for d in docs]
    return res


def build(corpus, out, on_shard=None, **options):
    options = {"n": 3, "batch_size": 8, **options}
    return build_corpus([corpus], out, PHRASES, BuildSettings(**options), on_shard=on_shard)


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref")
    summary = build(corpus, out)
    return out, summary


def test_sentence_boundaries_are_kept(en_parser):
    """The parser neither splits nor merges a preset sentence."""
    text = "We propose a new method. It works well. Table 2 shows the results."
    assert len(list(en_parser(text).sents)) == 3  # free parsing splits it
    doc = en_parser(sentence_doc(en_parser, text))
    sents = list(doc.sents)
    assert len(sents) == 1 and sents[0].text == text
    assert sum(1 for t in doc if t.dep_ == "ROOT") == 1


def test_build_outputs(reference, corpus):
    out, summary = reference
    assert summary["inputs"] == 12 and summary["inputs_skipped"] == 0 and summary["papers"] == 12
    # 12 papers: title + abstract (4..8) + 1 intro sentence
    n_src = sum(1 + (4 + i % 5) + 1 for i in range(12))
    assert summary["sentences"] == n_src == summary["source_sentences"]
    rows = [json.loads(l) for n in ("train", "valid") for l in (out / f"{n}.jsonl").read_text().splitlines()]
    assert len(rows) == summary["labeled_kept"] == summary["labeled"] - summary["duplicates_removed"]
    by_text = {r["text"]: r for r in rows}
    r = by_text["Table 2 shows the results of the tagging experiments."]
    assert r["label"] == "Reference to tables or figures" and r["paper_id"] == "P00-1000"
    assert r["section"] == "abstract" and r["sid"] == "2" and r["index"] == 2
    assert r["ngram"] and r["ngram"].lower() in r["text"].lower()
    # unlabeled sentences are not in the output
    assert not any("weather" in t for t in by_text)
    assert set(summary["per_label"]) <= {label for label, _ in PHRASES}
    assert sum(summary["per_label"].values()) == len(rows)
    # the .spacy files: one Doc per sentence with its gold label (SentenceCorpus input)
    docs = list(DocBin(store_user_data=True).from_disk(out / "train.spacy").get_docs(Vocab()))
    docs += list(DocBin(store_user_data=True).from_disk(out / "valid.spacy").get_docs(Vocab()))
    assert len(docs) == len(rows)
    for doc in docs:
        sents = list(doc.sents)
        assert len(sents) == 1
        row = by_text[doc.text]
        assert spacy_rhetoric.get_sent_labels(doc) == [row["label"]]
        assert sents[0]._.phrase_match.text == row["ngram"]
        assert doc._.rhetoric_doc_id == row["paper_id"]
        assert sents[0]._.rhetoric_sid == row["sid"]
    # ... and the encoder's SentenceCorpus reads one labelled Example per line
    import spacy

    from spacy_rhetoric.readers.corpora import SentenceCorpus

    examples = list(SentenceCorpus(out / "train.spacy")(spacy.blank("en")))
    train = [json.loads(l) for l in (out / "train.jsonl").read_text().splitlines()]
    assert [spacy_rhetoric.get_sent_labels(eg.reference) for eg in examples] == [[r["label"]] for r in train]


def test_dedup_keeps_first_copy(reference):
    out, summary = reference
    rows = [json.loads(l) for n in ("train", "valid") for l in (out / f"{n}.jsonl").read_text().splitlines()]
    outline = [r for r in rows if r["text"] == "The rest of the paper is organized as follows."]
    assert len(outline) == 1 and outline[0]["paper_id"] == "P00-1000"  # first in key order
    assert summary["duplicates_removed"] >= 11
    norm = Counter(normalise_text(r["text"]) for r in rows)
    assert max(norm.values()) == 1
    assert normalise_text("The  rest\tOF the paper") == normalise_text("the rest of the paper")


def test_split_by_paper(reference):
    out, summary = reference
    rows = {n: [json.loads(l) for l in (out / f"{n}.jsonl").read_text().splitlines()] for n in ("train", "valid")}
    train_papers = {r["paper_id"] for r in rows["train"]}
    valid_papers = {r["paper_id"] for r in rows["valid"]}
    assert train_papers and valid_papers and not train_papers & valid_papers
    assert all(r["split"] == n for n in rows for r in rows[n])
    assert summary["split"]["train_sentences"] == len(rows["train"])


def test_split_is_split_doc_ids_by_paper(reference):
    """The label split is splits.split_doc_ids by paper, stratified by label:
    the validation papers are its test side with share 1 - valid_fraction."""
    out, summary = reference
    rows = [json.loads(l) for n in ("train", "valid") for l in (out / f"{n}.jsonl").read_text().splitlines()]
    papers = [r["paper_id"] for r in rows]
    labels = [r["label"] for r in rows]
    expected = set(split_doc_ids(papers, share=0.8, seed=0, labels=labels)[1])
    assert {r["paper_id"] for r in rows if r["split"] == "valid"} == expected
    assert set(valid_papers(papers, labels, seed=0, valid_fraction=0.2)) == expected
    assert summary["split"]["valid_papers"] == len(expected)
    # seeded and reproducible
    assert valid_papers(papers, labels, seed=0) == valid_papers(papers, labels, seed=0)
    assert valid_papers(["a", "a"], ["x", "y"], seed=0) == []  # one paper: everything is training data


def test_stratified_split_keeps_labels_on_both_sides():
    """With labels, every label that has a sentence in each of the 5 folds'
    worth of papers is on both sides (the plain id shuffle can leave a rare
    label out of validation); papers never straddle the split."""
    rng = numpy.random.default_rng(0)
    ids, labels = [], []
    for p in range(100):
        rare = p % 10 == 0  # 10 papers carry the rare label
        for _ in range(int(rng.integers(3, 8))):
            ids.append(f"P{p:03d}")
            labels.append("rare" if rare and rng.random() < 0.5 else str(rng.integers(0, 3)))
    for seed in range(5):
        train, test = split_doc_ids(ids, share=0.8, seed=seed, labels=labels)
        assert not set(train) & set(test) and len(train) + len(test) == 100
        test_set = set(test)
        test_labels = {lab for i, lab in zip(ids, labels) if i in test_set}
        train_labels = {lab for i, lab in zip(ids, labels) if i not in test_set}
        assert test_labels == train_labels == {"0", "1", "2", "rare"}
        n_test = sum(i in test_set for i in ids)
        assert 0.1 < n_test / len(ids) < 0.3


def test_resume_after_interruption(corpus, reference, tmp_path):
    out = tmp_path / "out"
    seen = []

    class Stop(Exception):
        pass

    def stop_after_5(inp, header):
        seen.append(inp.key)
        if len(seen) == 5:
            raise Stop()

    with pytest.raises(Stop):
        build(corpus, out, on_shard=stop_after_5)
    assert len(list((out / "shards").glob("*.jsonl"))) == 5
    assert not (out / "train.jsonl").exists()
    snapshot = build(corpus, out, merge_only=True)  # merge what exists, label nothing
    assert snapshot["inputs_pending"] == 7 and snapshot["papers"] == 5
    assert snapshot["inputs_labeled_this_run"] == 0
    # a temp file left by a killed writer is ignored and cleaned up
    (out / "shards" / ".tmp-junk.jsonl.123").write_text("{broken")
    summary = build(corpus, out)
    assert summary["inputs_resumed"] == 5 and summary["inputs_labeled_this_run"] == 7
    assert outputs(out) == outputs(reference[0])
    assert not list((out / "shards").glob(".tmp-*"))
    # a third run has nothing left to label and still ends with the same files
    again = build(corpus, out)
    assert again["inputs_labeled_this_run"] == 0
    assert outputs(out) == outputs(reference[0])


def test_resume_refuses_other_settings(corpus, reference, tmp_path):
    out = tmp_path / "out"
    build(corpus, out, limit=2)
    with pytest.raises(CorpusBuildError, match="different settings"):
        build(corpus, out, n=4, limit=2)
    summary = build(corpus, out, n=4, limit=2, overwrite=True)
    assert summary["inputs_resumed"] == 0


@pytest.mark.slow
def test_killed_subprocess_resumes(corpus, reference, tmp_path):
    """SIGKILL a real CLI process mid-run, rerun: same output as uninterrupted."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "spacy_rhetoric", "label", str(corpus), "-o", str(out),
           "--phrases", str(tmp_path / "phrases.tsv"), "--n", "3", "--batch-size", "1"]
    (tmp_path / "phrases.tsv").write_text("".join(f"{l}\t{p}\t1\n" for l, p in PHRASES))
    killed, n_before, result = kill_then_rerun(cmd, out / "shards", min_shards=3)
    assert n_before >= 3
    assert result.returncode == 0, result.stderr[-2000:]
    summary = srsly.read_json(out / "summary.json")
    if killed:
        assert summary["inputs_resumed"] == n_before and n_before < 12
    assert outputs(out) == outputs(reference[0])


def test_malformed_inputs_skipped_and_counted(corpus, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "broken.xml").write_text('<PAPER><S sid="1">Table 2 shows the results of</PAPER>')
    (src / "empty.txt").write_text("\n\n")
    (src / "notes.txt").write_text("Table 2 shows the results of our tagging study.\n\nThe sky is blue.\n")
    (src / "sents.jsonl").write_text(
        json.dumps({"paper_id": "J1", "text": "In future work we plan to add more data.", "section": "conclusion"}) + "\n"
        + "{not json\n"
        + json.dumps({"paper_id": "J1", "no_text": 1}) + "\n"
        + json.dumps({"paper_id": "J2", "text": "Our system outperforms the baseline on parsing."}) + "\n"
    )
    summary = build_corpus([src], tmp_path / "out", PHRASES, BuildSettings(n=3))
    assert summary["inputs"] == 4 and summary["inputs_skipped"] == 2
    reasons = {s["input"]: s["reason"] for s in summary["skipped"]}
    assert set(reasons) == {"broken.xml", "empty.txt"}
    assert "broken.xml" in reasons["broken.xml"] and "no sentences" in reasons["empty.txt"]
    assert summary["bad_records"] == 2 and "sents.jsonl:2" in summary["bad_record_examples"][0]
    assert summary["sentences"] == 4 and summary["papers"] == 3
    rows = [json.loads(l) for n in ("train", "valid") for l in (tmp_path / "out" / f"{n}.jsonl").read_text().splitlines()]
    assert {r["paper_id"] for r in rows} == {"notes", "J1", "J2"}
    assert {r["section"] for r in rows if r["paper_id"] == "J1"} == {"conclusion"}


def test_spacy_input_roundtrip(reference, tmp_path):
    """The .spacy output is itself a valid input (one paper per Doc)."""
    out = reference[0]
    summary = build_corpus([out / "train.spacy"], tmp_path / "again", PHRASES, BuildSettings(n=3))
    train = [json.loads(l) for l in (out / "train.jsonl").read_text().splitlines()]
    assert summary["sentences"] == len(train)
    assert summary["labeled"] == len(train)  # every sentence was labeled before


def test_real_reference_papers(shared_data, tmp_path):
    root = shared_data / "cl-scisumm" / "training-40-manual"
    topics = sorted(p.name for p in root.iterdir())[:2]
    src = tmp_path / "cl"
    for t in topics:
        (src / t / "Reference_XML").mkdir(parents=True)
        xml = root / t / "Reference_XML" / f"{t}.xml"
        (src / t / "Reference_XML" / f"{t}.xml").write_bytes(xml.read_bytes())
    phrases = [("Reference to tables or figures", "table 1 shows the"),
               ("Showing the aim of the paper", "in this paper we describe"),
               ("Showing brief introduction to the methodology", "we present a novel")]
    summary = build_corpus([src], tmp_path / "out", phrases, BuildSettings(n=3))
    assert summary["papers"] == 2 and summary["inputs_skipped"] == 0
    assert summary["sentences"] > 200
    assert summary["labeled"] >= 1


def test_n_process_2_equals_1(corpus, reference, tmp_path):
    build(corpus, tmp_path / "np2", n_process=2)
    assert outputs(tmp_path / "np2") == outputs(reference[0])


@pytest.mark.slow
def test_dask_local_cluster_equals_single_process(corpus, reference, tmp_path):
    pytest.importorskip("distributed")
    summary = build(corpus, tmp_path / "dask", scheduler="local", workers=2)
    assert summary["inputs_labeled_this_run"] == 12
    assert outputs(tmp_path / "dask") == outputs(reference[0])


def test_missing_dask_gives_clear_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "distributed" or name.startswith("dask"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(JobError, match=r"spacy_rhetoric\[distributed\]"):
        import_distributed()


def test_code_file_imported_once(tmp_path):
    code = tmp_path / "custom.py"
    code.write_text("import builtins\nbuiltins._cb_loads = getattr(builtins, '_cb_loads', 0) + 1\n")
    import builtins

    import_code(code)
    import_code(code)
    assert builtins._cb_loads == 1
    with pytest.raises(CorpusBuildError, match="does not exist"):
        import_code(tmp_path / "missing.py")


def test_short_phrases_only_with_min_phrase_length(tmp_path):
    """Default: a phrase shorter than n gives no n-gram (paper); with
    min_phrase_length it is kept whole and labels sentences rooted in it."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("We use a parser.\nThe sky is blue.\n", encoding="utf8")
    phrases = PHRASES + [("Restatement of the aim or method", "we use")]
    default = build_corpus([src], tmp_path / "d", phrases, BuildSettings(n=3))
    assert default["labeled"] == 0
    assert json.loads((tmp_path / "d" / "build_config.json").read_text())["min_phrase_length"] == 3
    short = build_corpus([src], tmp_path / "s", phrases, BuildSettings(n=3, min_phrase_length=2))
    assert short["labeled"] == 1
    assert short["per_label"] == {"Restatement of the aim or method": 1}
    with pytest.raises(CorpusBuildError, match="min_phrase_length"):
        build_corpus([src], tmp_path / "x", phrases, BuildSettings(n=3, min_phrase_length=4))


def test_empty_input_directory_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusBuildError, match="no input files"):
        build_corpus([tmp_path / "empty"], tmp_path / "out", PHRASES, BuildSettings(n=3))


def _phrase_file(tmp_path: Path) -> Path:
    path = tmp_path / "phrases.tsv"
    path.write_text("".join(f"{label}\t{phrase}\t1\n" for label, phrase in PHRASES), encoding="utf8")
    return path


def _small_input(src: Path) -> Path:
    src.mkdir(parents=True, exist_ok=True)
    (src / "a.txt").write_text("Table 2 shows the results of our tagging study.\nThe sky is blue.\n",
                               encoding="utf8")
    (src / "b.txt").write_text("In this paper we propose a new method for chunking.\n", encoding="utf8")
    return src


def test_output_inside_input_folder_is_never_read(tmp_path):
    """Issue 9 item 5: `label DIR -o DIR/out` twice does not read its own outputs back."""
    src = _small_input(tmp_path / "in")
    first = build_corpus([src], src / "out", PHRASES, BuildSettings(n=3))
    first_files = outputs(src / "out")
    second = build_corpus([src], src / "out", PHRASES, BuildSettings(n=3))
    assert first["inputs"] == second["inputs"] == 2
    assert second["inputs_resumed"] == 2 and second["inputs_labeled_this_run"] == 0
    assert outputs(src / "out") == first_files
    # the files of any label build are left out of a directory, not only this build's
    assert [i.key for i in discover_inputs([src])] == ["a.txt", "b.txt"]
    # naming an output explicitly as an input is refused before anything is written over
    before = (src / "out" / "train.spacy").read_bytes()
    with pytest.raises(CorpusBuildError, match="output of this build"):
        build_corpus([src / "out" / "train.spacy"], src / "out", PHRASES, BuildSettings(n=3))
    assert (src / "out" / "train.spacy").read_bytes() == before
    # `-o .` beside the inputs: the user's files there are inputs, the build's own are not
    for _ in range(2):
        beside = build_corpus([src / "a.txt", src / "b.txt"], src, PHRASES, BuildSettings(n=3))
        assert beside["inputs"] == 2 and [i.key for i in discover_inputs([src])] == ["a.txt", "b.txt"]
    # the output directory itself as the only input: nothing outside it to read
    with pytest.raises(ValueError, match="same path as the input"):
        build_corpus([src / "out"], src / "out", PHRASES, BuildSettings(n=3))


def test_edited_input_is_labeled_again(tmp_path):
    """Issue 9 item 5: shards are keyed by content, so an edited input does not reuse its stale shard."""
    src = _small_input(tmp_path / "in")
    out = tmp_path / "out"
    build_corpus([src], out, PHRASES, BuildSettings(n=3))
    (src / "a.txt").write_text("In future work we plan to extend the tagging model.\n", encoding="utf8")
    summary = build_corpus([src], out, PHRASES, BuildSettings(n=3))
    assert summary["inputs_labeled_this_run"] == 1 and summary["inputs_resumed"] == 1
    rows = [json.loads(l) for n in ("train", "valid") for l in (out / f"{n}.jsonl").read_text().splitlines()]
    texts = {r["text"] for r in rows}
    assert "In future work we plan to extend the tagging model." in texts
    assert not any("Table 2" in t for t in texts)
    assert len(list((out / "shards").glob("a-*.jsonl"))) == 1  # the stale shard is gone


def test_no_usable_input_is_an_error(tmp_path):
    """Issue 9 item 8: every input skipped -> an error naming why, no empty outputs."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "broken.xml").write_text('<PAPER><S sid="1">Table 2 shows the results of</PAPER>')
    (src / "empty.txt").write_text("\n\n")
    with pytest.raises(CorpusBuildError, match="none of the 2 inputs is usable"):
        build_corpus([src], tmp_path / "out", PHRASES, BuildSettings(n=3))
    assert not (tmp_path / "out" / "train.jsonl").exists()
    with pytest.raises(CorpusBuildError, match="nothing to merge"):
        build_corpus([src], tmp_path / "snap", PHRASES, BuildSettings(n=3, merge_only=True))


def _label(args, **kw):
    from typer.testing import CliRunner

    import spacy_rhetoric.cli.label  # noqa: F401  registers the command
    from spacy_rhetoric.cli import app

    return CliRunner().invoke(app, ["label", *map(str, args)], **kw)


def test_label_cli_exits_non_zero_when_nothing_usable(tmp_path):
    """Issue 9 item 8: 0 usable inputs, or no labeled sentence: exit 1 and one line saying why."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "empty.txt").write_text("\n\n")
    phrases = _phrase_file(tmp_path)
    result = _label([src, "-o", tmp_path / "out", "--phrases", phrases, "--n", "3"])
    assert result.exit_code == 1
    assert "none of the 1 inputs is usable" in result.output and "✔" not in result.output
    (src / "empty.txt").write_text("The sky is blue.\n")
    result = _label([src, "-o", tmp_path / "out2", "--phrases", phrases, "--n", "3"])
    assert result.exit_code == 1
    assert "Nothing done: no sentence of the 1 read matched" in cli_text(result)


@pytest.mark.parametrize("option", ["--n-process", "--batch-size", "--workers", "--n"])
def test_label_cli_rejects_zero_counts(tmp_path, option):
    """Issue 9 item 10: a clear usage error, not a crash deep inside."""
    src = _small_input(tmp_path / "in")
    result = _label([src, "-o", tmp_path / "out", "--phrases", _phrase_file(tmp_path), option, "0"])
    assert result.exit_code == 2
    assert option in result.output and "must be at least 1" in result.output
    assert not (tmp_path / "out").exists()


def test_label_cli_bad_paths_are_clear_errors(tmp_path):
    """Issue 9 item 9: missing inputs, bad --phrases/--code and unusable outputs
    fail before any work with one line naming the path."""
    src = _small_input(tmp_path / "in")
    phrases = _phrase_file(tmp_path)
    (tmp_path / "file").write_text("x")
    cases = [
        ([tmp_path / "missing", "-o", tmp_path / "o1", "--phrases", phrases], "input not found"),
        ([src, "-o", tmp_path / "file", "--phrases", phrases], "is an existing file, expected a directory"),
        ([src, "-o", tmp_path / "o2", "--phrases", tmp_path / "nope.tsv"], "phrase list not found"),
        ([src, "-o", tmp_path / "o3", "--phrases", phrases, "--code", src], "--code file is a directory"),
    ]
    for args, expected in cases:
        result = _label(args)
        assert result.exit_code == 1, (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert expected in cli_text(result), (expected, result.output)
    assert not any((tmp_path / f"o{i}").exists() for i in (1, 2, 3))


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_label_cli_unwritable_output(tmp_path):
    src = _small_input(tmp_path / "in")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = _label([src, "-o", locked / "out", "--phrases", _phrase_file(tmp_path)])
    finally:
        locked.chmod(0o700)
    assert result.exit_code == 1 and "not writable" in result.output


def test_default_phrases_do_not_depend_on_the_current_directory(tmp_path, monkeypatch):
    """Issue 9 item 9: the default --phrases is found from any directory, or a clear error."""
    from spacy_rhetoric.cli.label import default_phrases

    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    (data / "iwatsuki2021-fe-database-cl").mkdir(parents=True)
    monkeypatch.setenv("SPACY_RHETORIC_DATA", "data")  # relative: resolved now, not later
    assert default_phrases() == data / "iwatsuki2021-fe-database-cl"
    monkeypatch.delenv("SPACY_RHETORIC_DATA")  # the data directory next to the repository
    assert default_phrases().is_absolute() and default_phrases().name == "iwatsuki2021-fe-database-cl"
    monkeypatch.setenv("SPACY_RHETORIC_DATA", str(tmp_path / "elsewhere"))
    src = _small_input(tmp_path / "in")
    result = _label([src, "-o", tmp_path / "out"])
    assert result.exit_code == 1
    assert "SPACY_RHETORIC_DATA" in result.output and "--phrases" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_single_sentence_factory_found_through_its_entry_point():
    """spaCy finds rhetoric_single_sentence without spacy_rhetoric being imported first."""
    code = ("import spacy; nlp = spacy.blank('en'); nlp.add_pipe('rhetoric_single_sentence'); "
            "doc = nlp('One. Two. Three.'); assert len(list(doc.sents)) == 1; "
            "import sys; print(sys.modules['spacy_rhetoric.pipeline.single_sentence'].__name__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "spacy_rhetoric.pipeline.single_sentence" in result.stdout
