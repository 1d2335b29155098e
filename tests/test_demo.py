"""The pieces of ``make demo`` on tiny inline data: spaCy training with a few
steps, reuse of trained models, assembly, annotation and the missing-data
message."""
import json
import random

import pytest
import spacy

from spacy_rhetoric import demo
from spacy_rhetoric.util import load_parser

SENTENCES = {
    "background": ["Parsing is a core task in language processing.",
                   "Many systems rely on syntactic trees for downstream tasks.",
                   "Treebanks are expensive to annotate for new languages."],
    "method": ["We train the parser on projected trees.",
               "Our model uses a shared bilingual lexicon.",
               "We filter the projected trees by confidence."],
    "result": ["Our approach improves attachment scores by three points.",
               "The results show large gains on free word order languages.",
               "Accuracy increases with the size of the lexicon."],
}


def write_csabstruct(path, n_abstracts, seed):
    rng = random.Random(seed)
    with path.open("w", encoding="utf8") as f:
        for _ in range(n_abstracts):
            labels = ["background", "method", "result"]
            sentences = [rng.choice(SENTENCES[label]) for label in labels]
            f.write(json.dumps({"abstract_id": 0, "sentences": sentences, "labels": labels,
                                "confs": [1.0] * 3}) + "\n")


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo_data")
    (root / "csabstruct").mkdir()
    write_csabstruct(root / "csabstruct" / "train.jsonl", 16, seed=0)
    write_csabstruct(root / "csabstruct" / "dev.jsonl", 4, seed=1)
    (root / demo.PHRASES_DIR).mkdir()
    data = demo.find_data(root)
    output = tmp_path_factory.mktemp("demo_out")
    classifier, encoder = demo.train_demo_models(data, output, classifier_steps=3, encoder_steps=3)
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


def test_training_writes_models_with_dev_scores(tiny_models):
    _, _, classifier, encoder = tiny_models
    clf = demo.dev_scores(classifier)
    enc = demo.dev_scores(encoder)
    assert 0.0 <= clf["rhetoric_f_micro"] <= 1.0
    assert 0.0 <= enc["encoder_p_at_1"] <= 1.0
    assert "rhetoric_function_classifier" in spacy.load(classifier).pipe_names


def test_trained_models_are_reused(tiny_models, capsys):
    data, output, classifier, encoder = tiny_models
    before = (classifier / "meta.json").stat().st_mtime_ns
    again = demo.train_demo_models(data, output, classifier_steps=3, encoder_steps=3)
    assert again == (classifier, encoder)
    assert (classifier / "meta.json").stat().st_mtime_ns == before
    assert capsys.readouterr().out.count("reusing") == 2


def test_assemble_and_annotate(tiny_models, tmp_path, capsys):
    _, _, classifier, encoder = tiny_models
    nlp = demo.assemble(load_parser("en_core_web_sm", exclude=["ner"]),
                        [("Aim", "we train the parser on")], [classifier, encoder])
    names = nlp.pipe_names
    assert names[-3:] == ["rhetoric_phrase_labeler", demo.CLASSIFIER, demo.ENCODER]
    assert "parser" in names
    # The classifier got its own tok2vec copy: it no longer listens to anything.
    assert demo.CLASSIFIER not in nlp.get_pipe("tok2vec").listening_components

    text = "Results\n\nWe train the parser on projected trees. Accuracy increases with the lexicon.\n"
    counts = demo.annotate(nlp, text, n_similar=2)
    out = capsys.readouterr().out
    assert counts == {"sentences": 2, "phrase_labeled": 1}
    assert "== Results ==" in out and "function:" in out and "phrase:   Aim" in out
    assert "most similar sentence" in out

    doc = nlp("We train the parser on projected trees. Accuracy increases with the lexicon.")
    sents = list(doc.sents)
    assert all(s._.rhetoric_label in SENTENCES for s in sents)
    assert sents[0].similarity(sents[1]) == pytest.approx(
        float(sents[0]._.rhetoric_vector @ sents[1]._.rhetoric_vector), abs=1e-5)

    nlp.to_disk(tmp_path / "pipeline")
    reloaded = spacy.load(tmp_path / "pipeline")
    doc2 = reloaded(doc.text)
    assert [s._.rhetoric_label for s in doc2.sents] == [s._.rhetoric_label for s in sents]
