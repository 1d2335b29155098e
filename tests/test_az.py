"""AZ-CL reader (Argumentative Zoning): detokenised sentences, headings, gold labels, bad files,
convert, the corpus reader, and the AZ classifier config."""
import pytest
import spacy
from helpers import cli_text
from spacy.tokens import DocBin

from spacy_rhetoric.extensions import get_doc_value, get_span_value
from spacy_rhetoric.readers.az import (
    CROSS_REFERENCE,
    EQUATION,
    ZONES,
    az_folds,
    coarse_labels,
    detokenise,
    read_az,
)
from spacy_rhetoric.readers.common import ReaderError, ReadStats

PAPER = """<?xml version='1.0' encoding='ISO-8859-1'?>
<PAPER>
<METADATA>
<FILENO>9599001</FILENO>
<TITLE> Parsing Caf\xe9 Menus </TITLE>
<AUTHORS><AUTHOR>A. Author</AUTHOR></AUTHORS>
</METADATA>
<ABSTRACT>
<A-S ID='A-0' DOCUMENTC='S-3' IA='OWN' AZ='AIM'> We propose a parser for menus . </A-S>
<A-S ID='A-1' IA='OWN' AZ='OWN'> It does n't fail ( often ) . </A-S>
</ABSTRACT>
<BODY>
<DIV DEPTH='1'>
<HEADER ID='H-0'> Introduction </HEADER>
<P>
<S ID='S-0' IA='OTH' AZ='BKG'> Menus are `` hard '' to parse <REF TYPE='P'>Smith 1990</REF> . </S>
<S ID='S-1' IA='OTH' AZ='OTH' R='OTH'> <REFAUTHOR>Jones</REFAUTHOR> 's parser uses <EQN/> rules . </S>
</P>
<P>
<S ID='S-2' IA='OTH' AZ='CTR'> It cannot handle prices , however . </S>
<S ID='S-3' ABSTRACTC='A-0' IA='OWN' AZ='AIM'> In this paper , we present a new parser . </S>
<S ID='S-4' IA='OWN' AZ='TXT'> Section <CREF/> describes it . </S>
</P>
</DIV>
<DIV DEPTH='1'>
<HEADER ID='H-1'> The Parser </HEADER>
<P>
<S ID='S-5' IA='OWN' AZ='BAS'> We follow <REF TYPE='A' SELF="YES">Smith 1990</REF> . </S>
</P>
<EXAMPLE ID='E-0'>
<EX-S> Soup of the day </EX-S>
</EXAMPLE>
<IMAGE ID='I-0'/>
<DIV DEPTH='2'>
<HEADER ID='H-2'> Results </HEADER>
<P>
<S ID='S-6' IA='OWN' AZ='OWN'> It parses 90 % of the menus . </S>
<S ID='S-7' IA='OWN' AZ='OWN'>   </S>
</P>
</DIV>
</DIV>
</BODY>
<REFERENCES>
<REFERENCE>Smith, J. 1990. <DATE>1990</DATE> Menus.</REFERENCE>
</REFERENCES>
</PAPER>
"""

TEXTS = [
    "We propose a parser for menus.", "It doesn't fail (often).", 'Menus are "hard" to parse (Smith 1990).',
    f"Jones's parser uses {EQUATION} rules.", "It cannot handle prices, however.",
    "In this paper, we present a new parser.", f"Section {CROSS_REFERENCE} describes it.", "We follow Smith 1990.",
    "Soup of the day", "It parses 90% of the menus."]


def _write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(text.encode("iso-8859-1"))
    return path


def test_detokenise():
    assert detokenise("We do n't ( see Sect. 2 ) .") == "We don't (see Sect. 2)."
    assert detokenise("`` Did Karl kiss Mary ? '' and") == '"Did Karl kiss Mary?" and'
    assert detokenise("it 's 51 % - 52 % , and ; so : x") == "it's 51% - 52%, and; so: x"
    assert detokenise("lexical _ sign/1 ( a , b ) .") == "lexical_sign/1 (a, b)."


def test_coarse_labels_of_zones():
    assert coarse_labels("OWN") == ["method", "result"] and coarse_labels("AIM") == ["objective"]
    assert all(coarse_labels(z) == ["background"] for z in ("BKG", "OTH", "CTR", "BAS"))
    assert coarse_labels("TXT") == [] and coarse_labels(None) == [] and coarse_labels("XYZ") == []
    assert len(ZONES) == 7


def test_read_az_paper(tmp_path):
    nlp = spacy.blank("en")
    stats = ReadStats()
    docs = list(read_az(_write(tmp_path, "9599001.annot", PAPER), nlp, stats=stats))
    assert (stats.read, stats.used, stats.skipped, stats.docs, stats.sentences) == (1, 1, 0, 1, 10)
    assert stats.notes == {"empty sentence left out": 1}
    doc = docs[0]
    sents = list(doc.sents)
    assert [s.text for s in sents] == TEXTS
    assert get_doc_value(doc, "title") == "Parsing Caf\xe9 Menus" and get_doc_value(doc, "doc_id") == "9599001"
    assert get_doc_value(doc, "source") == "az-cl"
    assert [get_span_value(s, "heading") for s in sents] == [
        "Abstract", "Abstract"] + ["1 Introduction"] * 5 + ["2 The Parser"] * 2 + ["2.1 Results"]
    assert [get_span_value(s, "paragraph") for s in sents] == [0, 0, 1, 1, 2, 2, 2, 3, 3, 4]
    assert [get_span_value(s, "fine_label") for s in sents] == [
        "AIM", "OWN", "BKG", "OTH", "CTR", "AIM", "TXT", "BAS", None, "OWN"]
    assert [get_span_value(s, "label") for s in sents] == [
        "objective", "method", "background", "background", "background", "objective", None, "background", None,
        "result"]
    gold = [get_span_value(s, "gold_labels") for s in sents]
    # own work: method or result, the likelier one first (a results heading: result)
    assert gold[1] == ["method", "result"] and gold[-1] == ["result", "method"]
    assert gold[6] is None and gold[8] is None
    assert [c.text for c in doc.spans["citations"]] == ["(Smith 1990)", "Jones", "Smith 1990"]
    assert {c.label_ for c in doc.spans["citations"]} == {"bibr"}
    # everything survives a DocBin, and the section tagger reads the headings
    db = DocBin(store_user_data=True)
    db.add(doc)
    back = next(DocBin(store_user_data=True).from_bytes(db.to_bytes()).get_docs(nlp.vocab))
    assert [get_span_value(s, "gold_labels") for s in back.sents] == gold
    nlp.add_pipe("rhetoric_section_tagger")(back)
    assert [s._.rhetoric_section for s in back.sents][:3] == ["abstract", "abstract", "introduction"]


BAD = {
    "broken.annot": "<PAPER><BODY><DIV DEPTH='1'><P><S ID='S-0'>no zone",
    "other.annot": "<article><S AZ='OWN'>Text.</S></article>",
    "unknown.annot": PAPER.replace("AZ='CTR'", "AZ='ZZZ'"),
}


def test_malformed_files(tmp_path):
    nlp = spacy.blank("en")
    folder = tmp_path / "az"
    _write(folder, "9599001.annot", PAPER)
    # not well-formed: unclosed sentence, paragraph and DIV, a stray closing tag: still read
    sloppy = PAPER.replace("</S>\n<S ID='S-1'", "\n<S ID='S-1'").replace("</P>\n</DIV>\n<DIV", "</B>\n<DIV")
    _write(folder / "more", "9599002.annot", sloppy.replace("9599001", "9599002"))
    for name, text in BAD.items():
        _write(folder / "bad", name, text)
    stats = ReadStats()
    docs = list(read_az(folder, nlp, stats=stats))
    assert len(docs) == 2 and (stats.read, stats.used, stats.skipped) == (5, 2, 3)
    stats.check()
    assert [s.text for s in docs[1].sents] == TEXTS
    assert get_doc_value(docs[1], "doc_id") == "9599002"
    text = " ".join(stats.examples)
    for name in BAD:
        assert name in text
    assert "unknown zone 'ZZZ'" in text and "no <PAPER>" in text and "no sentence with a zone" in text
    with pytest.raises(ReaderError, match="broken.annot"):
        list(read_az(folder, nlp, errors="raise"))
    assert len(list(read_az(folder, nlp, limit=1))) == 1


def test_convert_az_cli(tmp_path):
    from typer.testing import CliRunner

    import spacy_rhetoric.cli.convert  # noqa: F401  registers the command
    from spacy_rhetoric.cli import app

    folder = tmp_path / "az"
    _write(folder, "9599001.annot", PAPER)
    _write(folder, "broken.annot", BAD["broken.annot"])
    out = tmp_path / "az.spacy"
    result = CliRunner().invoke(app, ["convert", "az", str(folder), str(out)])
    assert result.exit_code == 0, result.output
    text = cli_text(result)
    assert "Records read: 2" in text and "Docs written: 1 (10 sentences)" in text
    assert "Records skipped: 1" in text and "broken.annot" in text
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert [get_span_value(s, "fine_label") for s in docs[0].sents][-1] == "OWN"
    bad_out = tmp_path / "bad.spacy"
    result = CliRunner().invoke(app, ["convert", "az", str(folder / "broken.annot"), str(bad_out)])
    assert result.exit_code == 1 and "broken.annot" in cli_text(result) and not bad_out.exists()


def test_az_corpus_reader(tmp_path):
    from spacy.util import registry

    import spacy_rhetoric.readers.corpora  # noqa: F401  registers the readers (as the entry points do)

    _write(tmp_path, "9599001.annot", PAPER)
    nlp = spacy.blank("en")
    corpus = registry.readers.get("spacy_rhetoric.AZCorpus.v1")(tmp_path)
    examples = list(corpus(nlp))
    assert len(examples) == 1
    ref = examples[0].reference
    assert [get_span_value(s, "fine_label") for s in ref.sents][0] == "AIM"


def test_az_folds_are_seeded_and_disjoint(tmp_path):
    nlp = spacy.blank("en")
    for i in range(7):
        _write(tmp_path, f"95990{i:02d}.annot", PAPER.replace("9599001", f"95990{i:02d}"))
    docs = list(read_az(tmp_path, nlp))
    folds = az_folds(docs)
    assert sorted(set(folds)) == ["fold1", "fold2", "fold3", "fold4", "fold5"]
    assert az_folds(docs[::-1]) == folds[::-1]


def test_shared_az_cl(shared_data):
    folder = shared_data / "az-cl"
    if not folder.exists():
        pytest.skip("AZ-CL not in the data mirror")
    stats = ReadStats()
    docs = list(read_az(folder, spacy.blank("en"), stats=stats))
    assert (stats.docs, stats.skipped) == (50, 0)
    zones = [get_span_value(s, "fine_label") for d in docs for s in d.sents]
    assert sum(z is not None for z in zones) == 8042
    assert sum(z == "OWN" for z in zones) == 5355 and sum(z == "TXT" for z in zones) == 120
    doc = next(d for d in docs if get_doc_value(d, "doc_id") == "9502004")
    sents = list(doc.sents)
    assert get_doc_value(doc, "title") == "Bottom-Up Earley Deduction"
    assert sents[0].text == "We propose a bottom-up variant of Earley deduction."
    assert get_span_value(sents[0], "heading") == "Abstract" and get_span_value(sents[0], "fine_label") == "AIM"
    assert get_span_value(sents[3], "heading") == "1 Introduction"
    assert sents[3].text.startswith("Recently, there has been a lot of interest in Earley deduction "
                                    "(Pereira and Warren 1983)")
    text = "\n".join(s.text for d in docs for s in d.sents)
    assert " n't" not in text and "``" not in text and " , " not in text


def test_fullpaper_corpus_takes_az_papers(tmp_path):
    import json

    from spacy_rhetoric.errors import RhetoricError
    from spacy_rhetoric.readers.fullpaper_corpus import write_az_corpus, write_fullpaper_corpus

    abstracts = tmp_path / "cs.jsonl"
    abstracts.write_text(json.dumps({"abstract_id": 0, "sentences": ["We study x.", "It works."],
                                     "labels": ["objective", "result"]}) + "\n")
    folder = tmp_path / "az"
    for i in range(5):
        _write(folder, f"95990{i:02d}.annot", PAPER.replace("9599001", f"95990{i:02d}"))
    nlp = spacy.blank("en")
    fold_of = dict(zip((get_doc_value(d, "doc_id") for d in read_az(folder, nlp)), az_folds(list(read_az(folder, nlp)))))
    counts = write_fullpaper_corpus(abstracts, abstracts, None, tmp_path / "a", az=folder, az_copies=2,
                                    az_heldout_folds=["fold1"])
    assert counts["train"]["az_papers"] == 4 and counts["train"]["docs"] == 1 + 4 * 2
    assert counts["heldout_az"]["docs"] == 1
    held = list(DocBin().from_disk(tmp_path / "a" / "heldout_az.spacy").get_docs(nlp.vocab))
    assert fold_of[get_doc_value(held[0], "doc_id")] == "fold1"
    train = list(DocBin().from_disk(tmp_path / "a" / "train.spacy").get_docs(nlp.vocab))
    assert {get_doc_value(d, "source") for d in train[1:]} == {"az-cl"}
    assert [s._.rhetoric_section for s in train[1].sents][:3] == ["abstract", "abstract", "introduction"]
    with pytest.raises(RhetoricError, match="no AZ-CL fold"):
        write_fullpaper_corpus(abstracts, abstracts, None, tmp_path / "b", az=folder, az_heldout_folds=["fold9"])
    fine = write_az_corpus(folder, tmp_path / "c", heldout_folds=["fold2"])
    assert fine["heldout"]["docs"] == 1 and fine["train"]["docs"] + fine["dev"]["docs"] == 4


def test_az_classifier_config_trains_on_the_az_corpus(tmp_path):
    """``configs/az_classifier.cfg`` on ``write_az_corpus``'s files (copies of
    the inline paper, a tiny BERT as its trunk, a few steps): the zones as
    ``rhetoric_fine_label`` / ``rhetoric_fine_scores`` in the ``rhetoric_fine``
    span group, and nothing written to the coarse fields."""
    from pathlib import Path

    from helpers import save_tiny_bert
    from spacy.cli.train import train

    from spacy_rhetoric.extensions import FINE_LABEL, GOLD_LABELS, LABEL, clear_field
    from spacy_rhetoric.readers.fullpaper_corpus import write_az_corpus

    for i in range(6):
        _write(tmp_path / "az", f"95990{i:02d}.annot", PAPER.replace("9599001", f"95990{i:02d}"))
    counts = write_az_corpus(tmp_path / "az", tmp_path / "corpus", heldout_folds=["fold1"], dev_share=0.25)
    assert counts["train"]["docs"] + counts["dev"]["docs"] + counts["heldout"]["docs"] == 6
    assert counts["dev"]["docs"] >= 1 and counts["heldout"]["docs"] >= 1
    bert = save_tiny_bert(tmp_path / "bert")
    config = Path(__file__).resolve().parent.parent / "configs" / "az_classifier.cfg"
    member = "components.rhetoric_fine_classifier.model.members.finetuned"
    train(config, tmp_path / "out", overrides={
        "paths.train": str(tmp_path / "corpus" / "train.spacy"), "paths.dev": str(tmp_path / "corpus" / "dev.spacy"),
        "training.max_steps": 4, "training.eval_frequency": 4, f"{member}.name": str(bert),
        f"{member}.frozen_layers": 0, f"{member}.max_length": 32,
        "components.rhetoric_fine_classifier.model.members.tfidf.min_df": 1})
    nlp = spacy.load(tmp_path / "out" / "model-last")
    assert set(nlp.get_pipe("rhetoric_fine_classifier").labels) == set(ZONES)
    docs = list(DocBin().from_disk(tmp_path / "corpus" / "heldout.spacy").get_docs(nlp.vocab))
    for field in (FINE_LABEL, LABEL, GOLD_LABELS):  # the held-out paper without its gold labels
        clear_field(docs[0], field)
    doc = nlp(docs[0])
    sents = list(doc.sents)
    assert all(s._.rhetoric_fine_label in ZONES for s in sents)
    assert all(set(s._.rhetoric_fine_scores) <= set(ZONES) and len(s._.rhetoric_fine_scores) >= 2 for s in sents)
    assert len(doc.spans["rhetoric_fine"]) == len(sents) and "rhetoric" not in doc.spans
    assert all(s._.rhetoric_label is None for s in sents)
