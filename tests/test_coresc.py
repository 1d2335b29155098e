"""ART / CoreSC reader: sentences, headings, gold labels, bad files, convert."""
import pytest
import spacy
from helpers import cli_text
from spacy.tokens import DocBin

from spacy_rhetoric.extensions import get_doc_value, get_span_value
from spacy_rhetoric.readers.common import ReaderError, ReadStats
from spacy_rhetoric.readers.coresc import CONCEPTS, coarse_labels, read_coresc


def _s(sid, concept, text, novelty="None"):
    return (f'<s sid="{sid}"><annotationART atype="GSC" type="{concept}" conceptID="{concept}1" '
            f'novelty="{novelty}" advantage="None">{text}</annotationART></s>')


PAPER = f"""<?xml version="1.0"?>
<PAPER><mode2 name="b000001a" hasDoc="yes" version="1"/>
<TITLE>{_s(1, "Obj", "Hard <IT>CdS</IT> dots")}</TITLE>
<ABSTRACT>{_s(2, "Obj", "We make CdS dots.")} {_s(3, "Res", "They glow.")}</ABSTRACT>
<BODY>
<DIV DEPTH="1"><HEADER/><P>{_s(4, "Mot", "Dots matter.")} {_s(5, "Bac",
    'Size effects<REF TYPE="P" ID="cit1 cit2">1,2</REF> are known.')}</P></DIV>
<DIV DEPTH="1"><HEADER>Experimental</HEADER><P>{_s(6, "Mod", "A model was fitted.")}</P>
 <DIV DEPTH="2"><HEADER>Synthesis</HEADER><P>{_s(7, "Met", "Films were dipped in H<SB>2</SB>S.", "Old")}
   {_s(8, "Exp", "We dried  them.")}</P>stray text</DIV>
 <DIV DEPTH="2"><HEADER></HEADER><P>{_s(9, "Exp", "We weighed them.")}</P></DIV>
</DIV>
<DIV DEPTH="1"><HEADER>Results and discussion</HEADER><P>{_s(10, "Obs", "The film turned yellow.")}
 {_s(11, "Res", "   ")} {_s(12, "Con", "So dots form in films.")}</P></DIV>
</BODY></PAPER>
"""


def _write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf8")
    return path


def test_coarse_labels_of_concepts():
    assert coarse_labels("Met") == ["method"] and coarse_labels("Met", "Old") == ["method", "background"]
    assert coarse_labels("Method", "Old") == ["method", "background"]
    assert coarse_labels("Bac", "Old") == ["background"]
    assert coarse_labels("Mot") == ["background", "objective"]
    assert coarse_labels("Con") == ["result", "other"]
    assert coarse_labels("Xyz") == []
    assert len(CONCEPTS) == 11 and {label for c in CONCEPTS for label in coarse_labels(c)} == {
        "background", "objective", "method", "result", "other"}


def test_read_coresc_paper(tmp_path):
    nlp = spacy.blank("en")
    stats = ReadStats()
    docs = list(read_coresc(_write(tmp_path, "b000001a_mode2.xml", PAPER), nlp, stats=stats))
    assert (stats.read, stats.used, stats.skipped, stats.docs, stats.sentences) == (1, 1, 0, 1, 10)
    assert stats.notes == {"text outside sentences left out": 1, "empty sentence left out": 1}
    doc = docs[0]
    sents = list(doc.sents)
    # the title is not a sentence; markup flattened, whitespace folded, a superscript citation apart
    assert [s.text for s in sents] == [
        "We make CdS dots.", "They glow.", "Dots matter.", "Size effects 1,2 are known.",
        "A model was fitted.", "Films were dipped in H2S.", "We dried them.", "We weighed them.",
        "The film turned yellow.", "So dots form in films."]
    assert get_doc_value(doc, "title") == "Hard CdS dots" and get_doc_value(doc, "doc_id") == "b000001a"
    assert [get_span_value(s, "heading") for s in sents] == [
        "Abstract", "Abstract", None, None, "1 Experimental", "1.1 Synthesis", "1.1 Synthesis",
        "1 Experimental", "2 Results and discussion", "2 Results and discussion"]
    assert [get_span_value(s, "paragraph") for s in sents] == [0, 0, 1, 1, 2, 3, 3, 4, 5, 5]
    assert [get_span_value(s, "fine_label") for s in sents] == [
        "Object", "Result", "Motivation", "Background", "Model", "Method", "Experiment", "Experiment",
        "Observation", "Conclusion"]
    assert [get_span_value(s, "label") for s in sents] == [
        "objective", "result", "background", "background", "method", "method", "method", "method", "result",
        "result"]
    assert [get_span_value(s, "gold_labels") for s in sents] == [
        ["objective"], ["result"], ["background", "objective"], ["background"], ["method"],
        ["method", "background"], ["method"], ["method"], ["result"], ["result", "other"]]
    assert [(c.text, c.label_, c.kb_id_) for c in doc.spans["citations"]] == [("1,2", "bibr", "cit1 cit2")]
    # everything survives a DocBin, and the section tagger files the sub-section under its parent
    db = DocBin(store_user_data=True)
    db.add(doc)
    back = next(DocBin(store_user_data=True).from_bytes(db.to_bytes()).get_docs(nlp.vocab))
    assert [get_span_value(s, "fine_label") for s in back.sents] == [get_span_value(s, "fine_label") for s in sents]
    assert [get_span_value(s, "gold_labels") for s in back.sents][5] == ["method", "background"]
    nlp.add_pipe("rhetoric_section_tagger")(back)
    assert [s._.rhetoric_section for s in back.sents][:2] == ["abstract", "abstract"]
    assert [s._.rhetoric_section for s in back.sents][4:] == ["method"] * 4 + ["results"] * 2


BAD = {
    "broken_mode2.xml": "<PAPER><BODY><DIV>",
    "entity_mode2.xml": '<?xml version="1.0"?><!DOCTYPE PAPER [<!ENTITY x "y">]><PAPER>&x;</PAPER>',
    "other_mode2.xml": "<article><body/></article>",
    "unknown_mode2.xml": PAPER.replace('type="Obs"', 'type="Zzz"'),
    "unannotated_mode2.xml": "<PAPER><ABSTRACT><s>Plain text.</s></ABSTRACT></PAPER>",
}


def test_bad_files_are_skipped_and_named(tmp_path):
    nlp = spacy.blank("en")
    folder = tmp_path / "art"
    _write(folder / "ann1", "b000001a_mode2.xml", PAPER)
    for name, text in BAD.items():
        _write(folder / "ann2", name, text)
    stats = ReadStats()
    docs = list(read_coresc(folder, nlp, stats=stats))
    assert len(docs) == 1 and (stats.read, stats.used, stats.skipped) == (6, 1, 5)
    stats.check()
    text = " ".join(stats.examples)
    for name in BAD:
        assert name in text
    assert "unknown CoreSC concept 'Zzz'" in text and "refused XML" in text and "not CoreSC" in text
    with pytest.raises(ReaderError, match="broken_mode2.xml"):
        list(read_coresc(folder, nlp, errors="raise"))
    assert len(list(read_coresc(folder, nlp, limit=1))) == 1


def test_convert_coresc_cli(tmp_path):
    from typer.testing import CliRunner

    import spacy_rhetoric.cli.convert  # noqa: F401  registers the command
    from spacy_rhetoric.cli import app

    folder = tmp_path / "art"
    _write(folder / "ann1", "b000001a_mode2.xml", PAPER)
    _write(folder / "ann2", "broken_mode2.xml", BAD["broken_mode2.xml"])
    out = tmp_path / "art.spacy"
    result = CliRunner().invoke(app, ["convert", "coresc", str(folder), str(out)])
    assert result.exit_code == 0, result.output
    text = cli_text(result)
    assert "Records read: 2" in text and "Docs written: 1 (10 sentences)" in text
    assert "Records skipped: 1" in text and "broken_mode2.xml" in text
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert [get_span_value(s, "fine_label") for s in docs[0].sents][-1] == "Conclusion"
    # nothing usable: one line naming the file, exit 1, no output
    bad_out = tmp_path / "bad.spacy"
    result = CliRunner().invoke(app, ["convert", "coresc", str(folder / "ann2" / "broken_mode2.xml"), str(bad_out)])
    assert result.exit_code == 1 and "broken_mode2.xml" in cli_text(result) and not bad_out.exists()


def test_shared_art_paper(shared_data):
    folder = shared_data / "coresc-art"
    if not folder.exists():
        pytest.skip("ART / CoreSC not in the data mirror")
    stats = ReadStats()
    docs = list(read_coresc(folder / "ann1" / "b303919f_mode2.xml", spacy.blank("en"), stats=stats))
    assert stats.docs == 1 and stats.skipped == 0
    doc = docs[0]
    sents = list(doc.sents)
    assert get_doc_value(doc, "doc_id") == "b303919f"
    assert get_doc_value(doc, "title").startswith("Synthesis of CdS nanoparticles")
    assert sents[0].text.startswith("In this paper, we discuss the synthesis of cadmium sulfide")
    assert get_span_value(sents[0], "heading") == "Abstract" and get_span_value(sents[0], "fine_label") == "Object"
    # sid 6: an earlier method (novelty Old)
    assert get_span_value(sents[4], "gold_labels") == ["method", "background"]
    assert all(get_span_value(s, "fine_label") in CONCEPTS.values() for s in sents)
    assert len(doc.spans["citations"]) > 10


def test_fullpaper_corpus_takes_art_papers(tmp_path):
    import json

    from spacy_rhetoric.readers.section_labels import write_fullpaper_corpus

    abstracts = tmp_path / "cs.jsonl"
    abstracts.write_text(json.dumps({"abstract_id": 0, "sentences": ["We study x.", "It works."],
                                     "labels": ["objective", "result"]}) + "\n")
    _write(tmp_path / "art" / "ann1", "b000001a_mode2.xml", PAPER)
    without = write_fullpaper_corpus(abstracts, abstracts, None, tmp_path / "a")
    assert without["train"]["docs"] == 1 and "coresc_papers" not in without["train"]
    counts = write_fullpaper_corpus(abstracts, abstracts, None, tmp_path / "b", coresc=tmp_path / "art")
    assert counts["train"]["docs"] == 2 and counts["train"]["coresc_papers"] == 1
    docs = list(DocBin().from_disk(tmp_path / "b" / "train.spacy").get_docs(spacy.blank("en").vocab))
    paper = docs[-1]
    assert get_doc_value(paper, "doc_id") == "b000001a"
    assert [s._.rhetoric_section for s in paper.sents][:2] == ["abstract", "abstract"]
    assert get_span_value(list(paper.sents)[5], "gold_labels") == ["method", "background"]


def test_fullpaper_corpus_holds_out_art_folds(tmp_path):
    import json

    from spacy_rhetoric.errors import RhetoricError
    from spacy_rhetoric.readers.coresc import coresc_folds
    from spacy_rhetoric.readers.section_labels import write_fullpaper_corpus

    abstracts = tmp_path / "cs.jsonl"
    abstracts.write_text(json.dumps({"abstract_id": 0, "sentences": ["We study x.", "It works."],
                                     "labels": ["objective", "result"]}) + "\n")
    ids = [f"b00000{i}a" for i in range(6)]
    for i in ids:
        _write(tmp_path / "art" / "ann1", f"{i}_mode2.xml", PAPER.replace('name="b000001a"', f'name="{i}"'))
    nlp = spacy.blank("en")
    docs = list(read_coresc(tmp_path / "art", nlp))
    folds = coresc_folds(docs)
    assert sorted(set(folds)) == ["fold1", "fold2", "fold3", "fold4", "fold5"]
    assert coresc_folds(docs[::-1]) == folds[::-1]  # a paper's fold does not depend on the order
    assert all(get_doc_value(d, "source") == "coresc-art" for d in docs)
    held = [i for i, f in zip(ids, folds) if f == "fold2"]
    counts = write_fullpaper_corpus(abstracts, abstracts, None, tmp_path / "c", coresc=tmp_path / "art",
                                    coresc_heldout_folds=["fold2"])
    assert counts["train"]["coresc_papers"] == 6 - len(held) and counts["heldout_coresc"]["docs"] == len(held)
    train = list(DocBin().from_disk(tmp_path / "c" / "train.spacy").get_docs(nlp.vocab))
    out = list(DocBin().from_disk(tmp_path / "c" / "heldout_coresc.spacy").get_docs(nlp.vocab))
    assert sorted(get_doc_value(d, "doc_id") for d in out) == sorted(held)
    assert not {get_doc_value(d, "doc_id") for d in train} & set(held)
    assert {get_doc_value(d, "source") for d in train} == {None, "coresc-art"}  # the abstract has none
    with pytest.raises(RhetoricError, match="fold9"):
        write_fullpaper_corpus(abstracts, abstracts, None, tmp_path / "d", coresc=tmp_path / "art",
                               coresc_heldout_folds=["fold9"])


def test_coresc_classifier_config_trains_on_the_coresc_corpus(tmp_path):
    """``configs/coresc_classifier.cfg`` on ``write_coresc_corpus``'s files (six
    copies of the inline paper, a tiny BERT as its trunk, a few steps): the
    CoreSC concepts as ``rhetoric_fine_label`` / ``rhetoric_fine_scores`` in the
    ``rhetoric_fine`` span group, and nothing written to the coarse fields."""
    from pathlib import Path

    from helpers import save_tiny_bert
    from spacy.cli.train import train

    from spacy_rhetoric.readers.section_labels import write_coresc_corpus

    for i in range(6):
        _write(tmp_path / "art" / "ann1", f"b00000{i}a_mode2.xml", PAPER.replace('name="b000001a"', f'name="b00000{i}a"'))
    counts = write_coresc_corpus(tmp_path / "art", tmp_path / "corpus", heldout_folds=["fold1"], dev_share=0.25)
    assert counts["train"]["docs"] + counts["dev"]["docs"] + counts["heldout"]["docs"] == 6
    assert counts["dev"]["docs"] >= 1 and counts["heldout"]["docs"] >= 1
    bert = save_tiny_bert(tmp_path / "bert")
    config = Path(__file__).resolve().parent.parent / "configs" / "coresc_classifier.cfg"
    member = "components.rhetoric_fine_classifier.model.members.finetuned"
    train(config, tmp_path / "out", overrides={
        "paths.train": str(tmp_path / "corpus" / "train.spacy"), "paths.dev": str(tmp_path / "corpus" / "dev.spacy"),
        "training.max_steps": 4, "training.eval_frequency": 4, f"{member}.name": str(bert),
        f"{member}.frozen_layers": 0, f"{member}.max_length": 32,
        "components.rhetoric_fine_classifier.model.members.tfidf.min_df": 1})
    nlp = spacy.load(tmp_path / "out" / "model-last")
    docs = list(DocBin().from_disk(tmp_path / "corpus" / "heldout.spacy").get_docs(nlp.vocab))
    from spacy_rhetoric.extensions import FINE_LABEL, GOLD_LABELS, LABEL, clear_field

    for field in (FINE_LABEL, LABEL, GOLD_LABELS):  # the held-out paper without its gold labels
        clear_field(docs[0], field)
    assert all(s._.rhetoric_fine_label is None for s in docs[0].sents)
    doc = nlp(docs[0])
    concepts = set(CONCEPTS.values())
    sents = list(doc.sents)
    assert all(s._.rhetoric_fine_label in concepts for s in sents)
    assert all(set(s._.rhetoric_fine_scores) <= concepts and len(s._.rhetoric_fine_scores) >= 2 for s in sents)
    assert len(doc.spans["rhetoric_fine"]) == len(sents) and "rhetoric" not in doc.spans
    assert all(s._.rhetoric_label is None for s in sents)


def test_scores_count_own_work_called_background():
    from spacy_rhetoric.evaluation.fullpaper import mean_of, score

    def row(gold, section="unknown"):
        return {"scored": True, "single": len(gold) == 1 and gold[0] != "other", "gold": gold, "section": section}

    rows = [row(["method"]), row(["method", "background"]), row(["result"]), row(["background"]),
            row(["result", "other"]), row(["method", "result"])]
    preds = ["background", "background", "result", "background", "background", "background"]
    out = score(rows, preds)
    # own work: gold method and/or result only (an earlier method and a conclusion are not)
    assert out["own_work_as_background"] == {"n": 3, "share": pytest.approx(2 / 3)}
    other = score(rows[:1], ["method"])
    pooled = mean_of({"a": out, "b": other})["own_work_as_background"]
    assert pooled["n"] == 4 and pooled["share"] == pytest.approx(2 / 4)
