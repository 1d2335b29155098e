"""spacy-rhetoric split: document-disjoint train/test split of a DocBin."""
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401
import spacy_rhetoric.cli.split  # noqa: F401  registers the command
from spacy_rhetoric.cli import app
from spacy_rhetoric.extensions import DOC_ID, get_doc_value
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.splits import split_doc_ids


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
