"""spacy-rhetoric split: document-disjoint train/test split of a DocBin."""
from pathlib import Path

import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401
import spacy_rhetoric.cli.split  # noqa: F401  registers the command
from spacy_rhetoric.cli import app
from spacy_rhetoric.extensions import DOC_ID, get_doc_value
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.readers.splits import split_doc_ids


def test_split_doc_ids_is_disjoint_seeded_and_sized():
    ids = [f"PMC{i}" for i in range(10)] * 2
    train, test = split_doc_ids(ids, share=0.8, seed=0)
    assert len(train) == 8 and len(test) == 2
    assert not set(train) & set(test) and set(train) | set(test) == set(ids)
    assert (train, test) == split_doc_ids(list(reversed(ids)), share=0.8, seed=0)  # order-free
    assert split_doc_ids(ids, share=0.8, seed=1) != (train, test)


def write_corpus(path, ids):
    nlp = spacy.blank("en")
    db = DocBin(store_user_data=True)
    for n, doc_id in enumerate(ids):
        db.add(doc_from_sentences(nlp, [f"Sentence {n} a.", f"Sentence {n} b."], labels=["x", "y"],
                                  doc_id=doc_id))
    db.to_disk(path)


def test_split_cli_keeps_documents_together(tmp_path):
    ids = ["A", "B", "C", "D", "E", "A", "C"]  # two docs share id A, two share C
    write_corpus(tmp_path / "in.spacy", ids)
    result = CliRunner().invoke(app, ["split", str(tmp_path / "in.spacy"), str(tmp_path / "tr.spacy"),
                                      str(tmp_path / "te.spacy"), "--share", "0.6"])
    assert result.exit_code == 0, result.output
    vocab = spacy.blank("en").vocab
    sides = {}
    for side in ("tr", "te"):
        docs = list(DocBin().from_disk(tmp_path / f"{side}.spacy").get_docs(vocab))
        sides[side] = [get_doc_value(d, DOC_ID) for d in docs]
        assert all(len(list(d.sents)) == 2 for d in docs)  # boundaries and user data kept
    assert not set(sides["tr"]) & set(sides["te"])
    assert sorted(sides["tr"] + sides["te"]) == sorted(ids)
    assert len(set(sides["tr"])) == 3 and len(set(sides["te"])) == 2


def test_split_cli_rejects_docs_without_id(tmp_path):
    nlp = spacy.blank("en")
    db = DocBin(store_user_data=True)
    db.add(doc_from_sentences(nlp, ["One.", "Two."], labels=["x", "y"]))
    db.to_disk(tmp_path / "in.spacy")
    result = CliRunner().invoke(app, ["split", str(tmp_path / "in.spacy"), str(tmp_path / "a.spacy"),
                                      str(tmp_path / "b.spacy")])
    assert result.exit_code == 1
    assert "doc 0 has no doc id" in " ".join(result.output.split())


def test_split_doc_ids_gives_the_same_ids_as_before():
    """The PMC-Sents-FULL split of bench_embeddings and the label split rest on
    these ids: pinned to the values of the first implementation."""
    assert split_doc_ids([f"PMC{i}" for i in range(10)], share=0.8, seed=0) == (
        ["PMC4", "PMC6", "PMC2", "PMC7", "PMC3", "PMC5", "PMC9", "PMC0"], ["PMC8", "PMC1"])
    assert split_doc_ids([f"d{i:03d}" for i in range(25)], share=0.7, seed=3) == (
        ["d013", "d012", "d015", "d023", "d000", "d017", "d003", "d022", "d008", "d009", "d018", "d006",
         "d001", "d010", "d002", "d011", "d020", "d016"],
        ["d014", "d004", "d007", "d005", "d021", "d019", "d024"])


def _split(tmp_path, *names):
    return CliRunner().invoke(app, ["split", *[str(tmp_path / n) for n in names]])


def test_split_cli_refuses_one_path_for_both_outputs(tmp_path):
    """Issue 9 item 6: `split in tr tr` used to report success with one side lost."""
    write_corpus(tmp_path / "in.spacy", ["A", "B", "C", "D", "E"])
    result = _split(tmp_path, "in.spacy", "tr.spacy", "tr.spacy")
    assert result.exit_code == 1
    assert "same path" in " ".join(result.output.split())
    assert not (tmp_path / "tr.spacy").exists()


def test_split_cli_never_writes_over_its_input(tmp_path):
    """Issue 9 item 6: `split in in te` used to overwrite the input."""
    write_corpus(tmp_path / "in.spacy", ["A", "B", "C", "D", "E"])
    before = (tmp_path / "in.spacy").read_bytes()
    for names in (("in.spacy", "in.spacy", "te.spacy"), ("in.spacy", "tr.spacy", "in.spacy")):
        result = _split(tmp_path, *names)
        assert result.exit_code == 1
        assert "same path as the input" in " ".join(result.output.split())
    assert (tmp_path / "in.spacy").read_bytes() == before
    assert not (tmp_path / "te.spacy").exists() and not (tmp_path / "tr.spacy").exists()


def test_split_outputs_are_written_atomically(tmp_path, monkeypatch):
    """A write that fails half-way leaves the earlier file under the real name
    untouched and no temporary file behind."""
    import pytest

    from spacy_rhetoric.readers.splits import split_docbin

    write_corpus(tmp_path / "in.spacy", ["A", "B", "C", "D", "E"])
    (tmp_path / "te.spacy").write_bytes(b"x\x9cearlier")  # a DocBin starts as zlib data
    real_to_disk = DocBin.to_disk
    calls = []

    def failing_to_disk(self, path):
        calls.append(path)
        if len(calls) == 2:
            with open(path, "wb") as fh:
                fh.write(b"half")
            raise OSError("disk full")
        return real_to_disk(self, path)

    monkeypatch.setattr(DocBin, "to_disk", failing_to_disk)
    with pytest.raises(OSError, match="disk full"):
        split_docbin(tmp_path / "in.spacy", tmp_path / "tr.spacy", tmp_path / "te.spacy")
    assert (tmp_path / "te.spacy").read_bytes() == b"x\x9cearlier"
    assert not list(tmp_path.glob(".tmp-*"))
    assert all(Path(p).name.startswith(".tmp-") for p in calls)


def test_split_cli_warns_about_an_empty_side(tmp_path):
    write_corpus(tmp_path / "in.spacy", ["A", "B"])
    result = _split(tmp_path, "in.spacy", "tr.spacy", "te.spacy")
    assert result.exit_code == 0
    assert "the test side is empty" in result.output


def test_kfold_doc_ids_cover_every_id_once_seeded():
    from spacy_rhetoric.readers.splits import kfold_doc_ids

    ids = [f"b{i:03d}" for i in range(23)] * 2
    folds = kfold_doc_ids(ids, n_folds=5, seed=0)
    assert sorted(len(f) for f in folds) == [4, 4, 5, 5, 5]
    assert sorted(i for f in folds for i in f) == sorted(set(ids))
    assert folds == kfold_doc_ids(list(reversed(ids)), n_folds=5, seed=0)  # order-free
    assert folds != kfold_doc_ids(ids, n_folds=5, seed=1)
    # pinned: the benchmarks' folds must not move
    assert kfold_doc_ids([f"d{i}" for i in range(6)], n_folds=3, seed=0) == [["d3", "d4"], ["d0", "d2"], ["d1", "d5"]]


def test_split_cli_folds(tmp_path):
    from spacy_rhetoric.readers.splits import kfold_doc_ids

    ids = ["A", "B", "C", "D", "E", "F", "A"]
    write_corpus(tmp_path / "in.spacy", ids)
    vocab = spacy.blank("en").vocab
    seen = []
    for fold in range(3):
        result = CliRunner().invoke(app, ["split", str(tmp_path / "in.spacy"), str(tmp_path / "tr.spacy"),
                                          str(tmp_path / "te.spacy"), "--folds", "3", "--fold", str(fold)])
        assert result.exit_code == 0, result.output
        test = [get_doc_value(d, DOC_ID) for d in DocBin().from_disk(tmp_path / "te.spacy").get_docs(vocab)]
        train = [get_doc_value(d, DOC_ID) for d in DocBin().from_disk(tmp_path / "tr.spacy").get_docs(vocab)]
        assert sorted(set(test)) == kfold_doc_ids(ids, n_folds=3)[fold] and not set(test) & set(train)
        seen += test
    assert sorted(seen) == sorted(ids)
    result = CliRunner().invoke(app, ["split", str(tmp_path / "in.spacy"), str(tmp_path / "tr.spacy"),
                                      str(tmp_path / "te.spacy"), "--folds", "3", "--fold", "3"])
    assert result.exit_code == 1 and "fold must be between 0 and 2" in " ".join(result.output.split())
