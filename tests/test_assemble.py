"""spacy_rhetoric.apps.assemble and `spacy-rhetoric assemble`: parser + labeler +
coarse and fine classifiers + encoder, sourced components detached from the
tok2vec / transformer they listened to, one writer per sentence field."""
import pytest
import spacy
from helpers import cli_text
from spacy.training import Example
from typer.testing import CliRunner

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.apps.assemble import (
    CLASSIFIER,
    ENCODER,
    PHRASE_LABELER,
    SECTION_TAGGER,
    assemble,
    check_pipeline_output,
    listener_paths,
    save_pipeline,
)
from spacy_rhetoric.cli import app, load_commands
from spacy_rhetoric.extensions import HEADING, set_span_values
from spacy_rhetoric.io import PathError
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.util import load_parser

TEXT = "Parsing is hard. We propose a parser. It is accurate."
DATA = [
    (["Parsing is hard.", "We propose a parser.", "It is accurate."], ["background", "method", "result"]),
    (["Tagging is old.", "We train a tagger.", "It is fast."], ["background", "method", "result"]),
]
FINE = {"background": "Showing the importance of the topic", "method": "Restatement of the aim or method",
        "result": "Description of the results"}
TOK2VEC_LISTENER = {"@architectures": "spacy.Tok2VecListener.v1", "width": 96, "upstream": "*"}


def train_tiny(nlp, fine=False):
    examples = []
    for sents, labels in DATA:
        ref = doc_from_sentences(nlp, sents, labels=[FINE[label] for label in labels] if fine else labels)
        examples.append(Example(nlp.make_doc(ref.text), ref))
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(2):
        nlp.update(examples, sgd=optimizer)
    return nlp


def tiny_classifier(path, fine=False):
    """Classifier with its own (inline) tok2vec, as the factory default."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    config = {"label_field": "fine_label", "scores_field": "fine_scores"} if fine else {}
    nlp.add_pipe(CLASSIFIER, name="rhetoric_fine_classifier" if fine else None, config=config)
    train_tiny(nlp, fine=fine).to_disk(path)
    return path


def tiny_listening_pipeline():
    """tok2vec + classifier + encoder, both heads listening to the shared
    tok2vec with upstream "*" (the parser pipeline has a tok2vec of its own)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("tok2vec")
    nlp.add_pipe(CLASSIFIER, config={"model": {"tok2vec": TOK2VEC_LISTENER}})
    nlp.add_pipe(ENCODER, config={"model": {"tok2vec": TOK2VEC_LISTENER}})
    return train_tiny(nlp)


@pytest.fixture
def parser_nlp():
    """A fresh parser pipeline: assemble adds its components to the one it is given."""
    return load_parser("en_core_web_sm", exclude=["ner"])


def test_listener_paths_found_in_config():
    config = {"factory": "x", "model": {"@architectures": "a", "width": 3,
                                        "tok2vec": {"@architectures": "spacy.Tok2VecListener.v1", "upstream": "*"},
                                        "other": {"@architectures": "b", "tok2vec": {
                                            "@architectures": "spacy-transformers.TransformerListener.v1",
                                            "upstream": "transformer", "pooling": {"@layers": "reduce_mean.v1"}}}}}
    assert sorted(listener_paths(config)) == [("model.other.tok2vec", "transformer"), ("model.tok2vec", "*")]


def test_assemble_coarse_and_fine_classifiers(tmp_path, parser_nlp):
    coarse = tiny_classifier(tmp_path / "coarse")
    fine = tiny_classifier(tmp_path / "fine", fine=True)
    nlp, report = assemble(parser_nlp, [(coarse, CLASSIFIER), (fine, CLASSIFIER)])
    assert nlp.pipe_names[-2:] == [CLASSIFIER, "rhetoric_fine_classifier"]
    assert report[CLASSIFIER] == f"from {coarse}"
    assert "fine label classifier" in nlp.meta["description"]
    doc = nlp(TEXT)
    for sent in doc.sents:
        assert sent._.rhetoric_label in {"background", "method", "result"}
        assert sent._.rhetoric_fine_label in set(FINE.values())
        assert set(sent._.rhetoric_fine_scores) == set(FINE.values())


def test_section_tagger_goes_before_the_classifier(tmp_path, parser_nlp):
    coarse = tiny_classifier(tmp_path / "coarse")
    nlp, report = assemble(parser_nlp, [(coarse, CLASSIFIER)])
    assert nlp.pipe_names[-2:] == [SECTION_TAGGER, CLASSIFIER] and SECTION_TAGGER in report
    doc = nlp.make_doc(TEXT)
    for token in doc:
        token.is_sent_start = token.i == 0 or doc[token.i - 1].text == "."
    set_span_values(doc, HEADING, list(doc.sents), ["1 Introduction", "3 Method", "Acknowledgments"])
    doc = nlp(doc)
    assert [s._.rhetoric_section for s in doc.sents] == ["introduction", "method", "other"]
    without, _ = assemble(load_parser("en_core_web_sm", exclude=["ner"]), [(coarse, CLASSIFIER)], sections=False)
    assert SECTION_TAGGER not in without.pipe_names


def test_assemble_rejects_two_writers_of_one_field(tmp_path, parser_nlp):
    coarse = tiny_classifier(tmp_path / "coarse")
    with pytest.raises(ValueError, match="both write the sentence field 'label'"):
        assemble(parser_nlp, [(coarse, CLASSIFIER), (coarse, CLASSIFIER)])


def test_assemble_missing_component_is_an_error(tmp_path, parser_nlp):
    coarse = tiny_classifier(tmp_path / "coarse")
    with pytest.raises(ValueError, match="expected one rhetoric_sentence_encoder component"):
        assemble(parser_nlp, [(coarse, ENCODER)])


def test_tok2vec_listeners_get_own_copies(tmp_path):
    source = tiny_listening_pipeline()
    expected = [s._.rhetoric_label for s in source(TEXT).sents]
    parser = load_parser("en_core_web_sm", exclude=["ner"])
    parser_listeners = list(parser.get_pipe("tok2vec").listening_components)
    nlp, report = assemble(parser, [(source, CLASSIFIER), (source, ENCODER)],
                           phrases=[("Aim", "we propose a parser")], n=3)
    assert nlp.pipe_names[-4:] == [PHRASE_LABELER, SECTION_TAGGER, CLASSIFIER, ENCODER]
    assert "own copy of model.tok2vec <- tok2vec" in report[CLASSIFIER]
    assert "own copy of model.tok2vec <- tok2vec" in report[ENCODER]
    # The parser's tok2vec got no new listeners; the config holds the copied layer.
    assert list(nlp.get_pipe("tok2vec").listening_components) == parser_listeners
    assert nlp.get_pipe_config(CLASSIFIER)["model"]["tok2vec"] == source.get_pipe_config("tok2vec")["model"]
    doc = nlp(TEXT)
    assert [s._.rhetoric_label for s in doc.sents] == expected
    assert all(s._.rhetoric_vector is not None for s in doc.sents)
    assert [s._.phrase_label for s in doc.sents][1] == "Aim"

    save_pipeline(nlp, tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert list(loaded.get_pipe("tok2vec").listening_components) == parser_listeners
    assert [s._.rhetoric_label for s in loaded(TEXT).sents] == expected


@pytest.mark.slow
def test_transformer_listener_gets_own_copy(tmp_path, parser_nlp):
    pytest.importorskip("torch").set_num_threads(1)
    from spacy_rhetoric.util import resolve_hf_model

    source = spacy.blank("en")
    source.add_pipe("sentencizer")
    source.add_pipe("transformer", config={"model": {
        "@architectures": "spacy_rhetoric.ChunkedTransformerModel.v1",
        "name": resolve_hf_model("sentence-transformers/all-MiniLM-L6-v2"), "max_windows_per_pass": 4,
        "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1", "window": 32, "stride": 24},
        "tokenizer_config": {"use_fast": True}}})
    source.add_pipe(CLASSIFIER, config={"model": {"tok2vec": {
        "@architectures": "spacy-transformers.TransformerListener.v1", "grad_factor": 1.0, "upstream": "*",
        "pooling": {"@layers": "reduce_mean.v1"}}}})
    train_tiny(source)
    expected = [s._.rhetoric_scores for s in source(TEXT).sents]
    nlp, report = assemble(parser_nlp, [(source, CLASSIFIER)])
    assert "own copy of model.tok2vec <- transformer" in report[CLASSIFIER]
    assert "transformer" not in nlp.pipe_names
    assert not source.get_pipe("transformer").listening_components
    save_pipeline(nlp, tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    for pipe in (nlp, loaded):
        got = [s._.rhetoric_scores for s in pipe(TEXT).sents]
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            assert a == pytest.approx(b, abs=1e-4)


def test_check_pipeline_output(tmp_path):
    coarse = tiny_classifier(tmp_path / "coarse")
    assert check_pipeline_output(tmp_path / "new") == tmp_path / "new"
    assert check_pipeline_output(coarse) == coarse  # an existing pipeline is replaced
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("keep me")
    with pytest.raises(PathError, match="holds no spaCy pipeline"):
        check_pipeline_output(tmp_path / "notes")
    with pytest.raises(PathError, match="same path as the input"):
        check_pipeline_output(coarse, inputs=[coarse])


@pytest.mark.slow
def test_cli_assemble(tmp_path):
    load_commands()
    runner = CliRunner()
    coarse = tiny_classifier(tmp_path / "coarse")
    fine = tiny_classifier(tmp_path / "fine", fine=True)
    out = tmp_path / "out"
    result = runner.invoke(app, ["assemble", str(out), "--classifier", str(coarse), "--fine-classifier", str(fine),
                                 "--name", "tiny", "--version", "1.2.3", "--license", "CC BY-NC"])
    assert result.exit_code == 0, result.output
    loaded = spacy.load(out)
    assert loaded.meta["name"] == "tiny" and loaded.meta["version"] == "1.2.3"
    assert loaded.meta["license"] == "CC BY-NC"
    assert "fine label classifier" in loaded.meta["description"]
    assert {s._.rhetoric_fine_label for s in loaded(TEXT).sents} <= set(FINE.values())
    assert not list(tmp_path.glob(".tmp-*")) and not list(tmp_path.glob(".old-*"))

    # Rerun over the existing pipeline: replaced.
    result = runner.invoke(app, ["assemble", str(out), "--classifier", str(coarse)])
    assert result.exit_code == 0, result.output
    assert "rhetoric_fine_classifier" not in spacy.load(out).pipe_names

    # Clash: one line, exit 1, nothing written.
    result = runner.invoke(app, ["assemble", str(tmp_path / "clash"), "--classifier", str(coarse),
                                 "--fine-classifier", str(coarse)])
    assert result.exit_code == 1 and "both write the sentence field 'label'" in cli_text(result)
    assert not (tmp_path / "clash").exists()

    result = runner.invoke(app, ["assemble", str(tmp_path / "x"), "--classifier", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "not found" in cli_text(result)
    result = runner.invoke(app, ["assemble", str(coarse), "--classifier", str(coarse)])
    assert result.exit_code == 1 and "same path as the input" in cli_text(result)
    result = runner.invoke(app, ["assemble", str(tmp_path / "y")])
    assert result.exit_code == 1 and "Nothing done" in cli_text(result)


def test_save_pipeline_failure_keeps_the_old_pipeline(tmp_path, monkeypatch):
    coarse = tiny_classifier(tmp_path / "coarse")
    nlp = spacy.load(coarse)
    save_pipeline(nlp, tmp_path / "out")
    before = (tmp_path / "out" / "config.cfg").read_text()

    def broken_to_disk(path, **kwargs):
        path.mkdir()
        (path / "config.cfg").write_text("half written")
        raise OSError("disk full")

    monkeypatch.setattr(nlp, "to_disk", broken_to_disk)
    with pytest.raises(OSError, match="disk full"):
        save_pipeline(nlp, tmp_path / "out")
    assert (tmp_path / "out" / "config.cfg").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["coarse", "out"]
