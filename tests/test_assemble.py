"""scripts/assemble_pipeline.py: parser + labeler + coarse and fine classifiers + encoder."""
import importlib.util
from pathlib import Path

import pytest
import spacy
from spacy.training import Example

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.readers.common import doc_from_sentences

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "assemble_pipeline.py"
DATA = [
    (["Parsing is hard.", "We propose a parser.", "It is accurate."], ["background", "method", "result"]),
    (["Tagging is old.", "We train a tagger.", "It is fast."], ["background", "method", "result"]),
]
FINE = {"background": "Showing the importance of the topic", "method": "Restatement of the aim or method",
        "result": "Description of the results"}


def load_script():
    spec = importlib.util.spec_from_file_location("assemble_pipeline", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_classifier(path, fine=False):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    config = {"label_field": "fine_label", "scores_field": "fine_scores"} if fine else {}
    nlp.add_pipe("rhetoric_function_classifier", name="rhetoric_fine_classifier" if fine else None,
                 config=config)
    examples = []
    for sents, labels in DATA:
        ref = doc_from_sentences(nlp, sents, labels=[FINE[l] for l in labels] if fine else labels)
        examples.append(Example(nlp.make_doc(ref.text), ref))
    nlp.initialize(lambda: examples)
    nlp.to_disk(path)
    return path


def test_assemble_coarse_and_fine_classifiers(tmp_path):
    script = load_script()
    coarse = tiny_classifier(tmp_path / "coarse")
    fine = tiny_classifier(tmp_path / "fine", fine=True)
    nlp, report = script.assemble(parser="en_core_web_sm", phrases=None, classifier=coarse,
                                  fine_classifier=fine, encoder=None, exclude=["ner"])
    assert "rhetoric_function_classifier" in nlp.pipe_names and "rhetoric_fine_classifier" in nlp.pipe_names
    doc = nlp("Parsing is hard. We propose a parser. It is accurate.")
    for sent in doc.sents:
        assert sent._.rhetoric_label in {"background", "method", "result"}
        assert sent._.rhetoric_fine_label in set(FINE.values())
        assert set(sent._.rhetoric_fine_scores) == set(FINE.values())
    assert script.main([str(tmp_path / "out"), "--classifier", str(coarse), "--fine-classifier", str(fine)]) == 0
    loaded = spacy.load(tmp_path / "out")
    assert "fine communicative-function classifier" in loaded.meta["description"]
    doc2 = loaded("Parsing is hard. We propose a parser. It is accurate.")
    assert [s._.rhetoric_fine_label for s in doc2.sents] == [s._.rhetoric_fine_label for s in doc.sents]


def test_assemble_rejects_two_classifiers_on_one_field(tmp_path):
    script = load_script()
    coarse = tiny_classifier(tmp_path / "coarse")
    with pytest.raises(ValueError, match="both write the sentence field 'label'"):
        script.assemble(parser="en_core_web_sm", phrases=None, classifier=coarse, fine_classifier=coarse,
                        encoder=None, exclude=["ner"])
