"""``spacy-rhetoric demo`` (``make demo``) on tiny inline data: spaCy training
with a few steps from the packaged configs, reuse of trained models, the whole
run from another directory, annotation and the missing-data message. The
assembly itself is tested in test_assemble.py, the demo from an installed
wheel in test_package.py."""
import json

import pytest
import spacy
from helpers import DEMO_SENTENCES, cli_text, write_tiny_demo_data

from spacy_rhetoric.apps import demo, training_runs
from spacy_rhetoric.resources import config_names, config_path


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    root = write_tiny_demo_data(tmp_path_factory.mktemp("demo_data"))
    data = demo.find_data(root)
    assert data.mulms == root / demo.MULMS_FILE
    output = tmp_path_factory.mktemp("demo_out")
    classifier, encoder = demo.train_demo_models(data, output, classifier_steps=3, encoder_steps=3, background=True)
    return data, output, classifier, encoder


def test_find_data_names_missing_files(tmp_path):
    with pytest.raises(demo.DemoError) as err:
        demo.find_data(tmp_path)
    message = str(err.value)
    assert str(tmp_path / "csabstruct" / "train.jsonl") in message
    assert "SPACY_RHETORIC_DATA" in message


def test_data_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SPACY_RHETORIC_DATA", str(tmp_path))
    assert demo.data_dir() == tmp_path


@pytest.mark.slow  # trains (tiny_models)
def test_training_writes_models_with_dev_scores(tiny_models):
    _, _, classifier, encoder = tiny_models
    clf = training_runs.dev_scores(classifier)
    enc = training_runs.dev_scores(encoder)
    assert 0.0 <= clf["rhetoric_f_micro"] <= 1.0
    assert 0.0 <= enc["encoder_p_at_1"] <= 1.0
    assert "rhetoric_function_classifier" in spacy.load(classifier).pipe_names
    # the encoder trained in a child process (BackgroundTraining), its output in the log
    log = (classifier.parent.parent / "encoder.log").read_text(encoding="utf8")
    assert "rhetoric_sentence_encoder" in log and "Saved pipeline" in log
    assert "encoder_p_at_1" in json.loads((encoder / "meta.json").read_text(encoding="utf8"))["performance"]


@pytest.mark.slow  # trains (tiny_models)
def test_the_classifier_is_scored_once_on_the_whole_dev_set(tiny_models):
    """spaCy's loop evaluates on one dev document only (train_pipeline with evaluate_at_end);
    the scores in meta.json are those of the saved model on the whole dev set."""
    from spacy.util import registry

    data, output, classifier, _ = tiny_models
    nlp = spacy.load(classifier)
    assert nlp.config["training"]["eval_frequency"] == 4 and nlp.config["corpora"]["dev"]["limit"] == 1
    dev = nlp.config.interpolate()["corpora"]["dev"]
    examples = list(registry.resolve({"dev": {**dev, "limit": 0}})["dev"](nlp))
    assert len(examples) == 4  # the four dev abstracts, not the loop's one
    scores = nlp.evaluate(examples)
    performance = training_runs.dev_scores(classifier)
    assert performance["rhetoric_f_micro"] == pytest.approx(scores["rhetoric_f_micro"])
    assert performance["rhetoric_f_macro"] == pytest.approx(scores["rhetoric_f_macro"])
    assert "rhetoric_function_classifier_loss" in performance


@pytest.mark.slow  # trains (tiny_models)
def test_trained_models_are_reused(tiny_models, capsys):
    data, output, classifier, encoder = tiny_models
    before = (classifier / "meta.json").stat().st_mtime_ns
    again = demo.train_demo_models(data, output, classifier_steps=3, encoder_steps=3, background=False)
    assert again == (classifier, encoder)
    assert (classifier / "meta.json").stat().st_mtime_ns == before
    assert capsys.readouterr().out.count("reusing") == 2


@pytest.mark.slow  # trains (tiny_models)
def test_annotate(tiny_models, capsys, tmp_path):
    from spacy_rhetoric.apps.assemble import CLASSIFIER, ENCODER, assemble

    _, _, classifier, encoder = tiny_models
    nlp, _ = assemble("en_core_web_sm", [(classifier, CLASSIFIER), (encoder, ENCODER)],
                      phrases=[("Aim", "we train the parser on")])
    paper = tmp_path / "paper.txt"
    paper.write_text("4 Results\n\nModel.\n\nWe train the parser on projected trees. Accuracy increases with the "
                     "lexicon.\n\nAcknowledgments\n\nWe thank the reviewers for their comments.\n", encoding="utf8")
    counts = demo.annotate(nlp, paper, n_similar=2)
    out = capsys.readouterr().out
    assert counts == {"sentences": 4, "phrase_labeled": 1}
    # the neighbours shown are full sentences: the fragment is labelled but neither asked about nor shown
    assert "Model." in out.split("most similar sentence")[0] and "Model." not in out.split("most similar sentence")[1]
    assert "== 4 Results  [section: results] ==" in out and "phrase: Aim" in out
    assert "== Acknowledgments  [section: other] ==" in out
    assert "other (1.00)" in out  # back matter: other by rule
    assert "most similar sentence" in out
    sents = list(nlp("We train the parser on projected trees. Accuracy increases with the lexicon.").sents)
    assert all(s._.rhetoric_label in DEMO_SENTENCES for s in sents)
    assert sents[0].similarity(sents[1]) == pytest.approx(
        float(sents[0]._.rhetoric_vector @ sents[1]._.rhetoric_vector), abs=1e-5)


@pytest.mark.parametrize("text,expected", [
    ("We train the parser on projected trees.", True),
    ("Which papers discuss the effects of Ranibizumab on the Retina?", True),
    ("\"Results are shown in Table 2.\"", True),
    ("where W is a weight matrix, g k and h k are defined similarly to g !", False),
    ("2017, MetaMap Lite) 6 , with minimal post-processing to extract and link entities to the KB.", False),
    ("The input token representations are passed through one fully-connected layer and then", False),
])
def test_only_well_formed_sentences_are_asked_about(text, expected):
    assert demo.is_well_formed(text) is expected


def test_a_failed_background_training_names_its_log_and_is_not_reused(tmp_path):
    config = tmp_path / "broken.cfg"
    config.write_text("[nlp]\nlang = \"en\"\npipeline = [\"no_such_component\"]\n", encoding="utf8")
    job = training_runs.BackgroundTraining(config, tmp_path / "out", {"training.max_steps": 3},
                                           log=tmp_path / "train.log")
    with pytest.raises(training_runs.TrainingFailed) as err:
        job.wait()
    assert str(tmp_path / "train.log") in str(err.value) and "exit code" in str(err.value)
    assert not (tmp_path / "out" / training_runs.STAMP_FILE).exists()
    job.stop()  # nothing left to stop


def test_find_data_optional_sources(tmp_path):
    (tmp_path / "csabstruct").mkdir()
    for name in ("train.jsonl", "dev.jsonl"):
        (tmp_path / "csabstruct" / name).write_text("", encoding="utf8")
    (tmp_path / demo.PHRASES_DIR).mkdir()
    data = demo.find_data(tmp_path)
    assert data.pmc is None and data.scisumm is None and data.paper is None and data.mulms is None
    assert data.inputs() == [data.train, data.dev, data.phrases]
    (tmp_path / demo.TEI_PAPER).parent.mkdir(parents=True)
    (tmp_path / demo.TEI_PAPER).write_text("<TEI/>", encoding="utf8")
    assert demo.find_data(tmp_path).paper == tmp_path / demo.TEI_PAPER


@pytest.mark.slow  # trains (tiny_models)
def test_run_writes_pipeline_and_reuses_models(tiny_models, monkeypatch, tmp_path, capsys):
    data, output, classifier, _ = tiny_models
    monkeypatch.setenv("SPACY_RHETORIC_DATA", str(data.train.parent.parent))
    monkeypatch.chdir(tmp_path)  # any directory: configs and the sample paper are package data
    counts = demo.run(None, output, classifier_steps=3, encoder_steps=3)
    out = capsys.readouterr().out
    assert out.count("reusing") == 2
    assert f"configs from {config_path('classifier').parent}" in out
    assert counts["sentences"] > 10  # the packaged sample paper
    nlp = spacy.load(output / "pipeline")
    assert nlp.pipe_names[-4:] == ["rhetoric_phrase_labeler", "rhetoric_section_tagger",
                                   "rhetoric_function_classifier", "rhetoric_sentence_encoder"]
    assert "[section: results]" in out and "[section: abstract]" in out  # the packaged sample paper
    assert [s._.rhetoric_label in DEMO_SENTENCES for s in nlp("We train the parser. It works.").sents] == [True, True]
    # its own identity (spacy_rhetoric.meta), never the parser's
    assert (nlp.meta["name"], nlp.meta["license"]) == (demo.DEMO_PIPELINE_NAME, "CC BY-SA 4.0")
    assert [s["name"] for s in nlp.meta["sources"]][:2] == ["CSAbstruct", "MuLMS-AZ"]
    assert "rhetoric_f_micro" in nlp.meta["performance"] and "ents_f" not in nlp.meta["performance"]


@pytest.mark.slow  # trains (tiny_models)
def test_by_default_the_classifiers_trunk_gives_the_vectors(tiny_models, monkeypatch, tmp_path, capsys):
    data, output, _, _ = tiny_models
    monkeypatch.setenv("SPACY_RHETORIC_DATA", str(data.train.parent.parent))
    monkeypatch.chdir(tmp_path)
    counts = demo.run(None, output, classifier_steps=3, encoder_steps=demo.DEFAULT_ENCODER_STEPS)
    out = capsys.readouterr().out
    assert demo.DEFAULT_ENCODER_STEPS == 0 and out.count("reusing") == 1 and counts["sentences"] > 10
    nlp = spacy.load(output / "pipeline")
    assert nlp.pipe_names[-2:] == ["rhetoric_section_tagger", "rhetoric_function_classifier"]
    doc = nlp("We train the parser. It works.")
    assert all(s._.rhetoric_vector is not None and s._.rhetoric_label is not None for s in doc.sents)
    assert "most similar sentence" in out and "its vectors (by gold label) P@1" in out


def test_cli_demo_without_data_fails_clearly(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app, load_commands

    load_commands()
    monkeypatch.setenv("SPACY_RHETORIC_DATA", str(tmp_path / "nowhere"))
    result = CliRunner().invoke(app, ["demo", "--output", str(tmp_path / "out")])
    output = cli_text(result)
    assert result.exit_code == 1
    assert "demo data is missing" in output and "SPACY_RHETORIC_DATA" in output
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # trains (tiny_models)
def test_cli_demo_bad_pdf_fails_before_training(tiny_models, monkeypatch, tmp_path):
    """A paper that cannot be read (here a truncated PDF) is named before any
    training starts."""
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app, load_commands

    data = tiny_models[0]
    load_commands()
    monkeypatch.setenv("SPACY_RHETORIC_DATA", str(data.train.parent.parent))
    bad = tmp_path / "paper.pdf"
    bad.write_bytes(b"%PDF-1.4\n1 0 obj\n<<")
    result = CliRunner().invoke(app, ["demo", str(bad), "--output", str(tmp_path / "out")])
    output = cli_text(result)
    assert result.exit_code == 1 and "paper.pdf" in output and "Traceback" not in output
    assert not (tmp_path / "out").exists()


def test_default_data_dirs_start_from_cwd(monkeypatch, tmp_path):
    monkeypatch.delenv("SPACY_RHETORIC_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert demo.default_data_dirs()[0] == tmp_path / "shared" / "data"
    assert demo.data_dir() == tmp_path / "shared" / "data"


def test_packaged_configs_and_sample_paper():
    assert set(config_names()) == {"az_classifier", "classifier", "classifier_fast", "classifier_sections", "coresc_classifier",
                                   "encoder", "fine_classifier", "rhetoric_trf"}
    spacy.util.load_config(config_path("classifier_sections"))
    coresc = spacy.util.load_config(config_path("coresc_classifier"))
    assert coresc["components"]["rhetoric_fine_classifier"]["label_field"] == "fine_label"
    assert (demo.CLASSIFIER_CONFIG, demo.ENCODER_CONFIG) == ("classifier", "encoder")
    config = spacy.util.load_config(config_path(demo.CLASSIFIER_CONFIG))
    assert config["corpora"]["train"]["section_dropout"] > 0
    assert config_path("encoder.cfg") == config_path("encoder")
    spacy.util.load_config(config_path("classifier_fast"))
    with pytest.raises(FileNotFoundError, match="available: az_classifier, classifier, classifier_fast"):
        config_path("nope")
    assert demo.sample_paper().read_text(encoding="utf8").strip()


def test_models_are_trained_again_when_the_section_names_change(tmp_path, monkeypatch):
    """A model made with other section names is not reused: its section
    features would have another width."""
    (tmp_path / "train.jsonl").write_text("{}\n", encoding="utf8")
    config = config_path("classifier.cfg")
    stamp = training_runs.training_stamp(config, {}, [tmp_path / "train.jsonl"])
    assert training_runs.training_stamp(config, {}, [tmp_path / "train.jsonl"]) == stamp
    monkeypatch.setattr(training_runs, "SENTENCE_SECTIONS", training_runs.SENTENCE_SECTIONS[:-1])
    assert training_runs.training_stamp(config, {}, [tmp_path / "train.jsonl"]) != stamp


def test_the_pipeline_names_the_corpora_it_trained_on(tmp_path):
    """The demo's meta.json sources: the corpora of its data directory the classifier learns from."""
    from spacy_rhetoric.meta import SOURCES

    root = write_tiny_demo_data(tmp_path)
    assert demo.training_sources(demo.find_data(root)) == ["csabstruct", "mulms-az"]
    (root / demo.MULMS_FILE).unlink()
    assert demo.training_sources(demo.find_data(root)) == ["csabstruct"]
    assert set(demo.TRAINING_SOURCES.values()) <= set(SOURCES)
