"""spacy_rhetoric.meta: the identity of a pipeline the project writes
(name, licence from its training sources, sources, scores, requirements),
and assemble writing it."""
import pytest
import spacy
from helpers import four_papers_pipeline

from spacy_rhetoric import meta as meta_module
from spacy_rhetoric.errors import RhetoricError
from spacy_rhetoric.meta import NONE_STATED, SOURCES, combined_licence, load_requirements, rhetoric_scores


@pytest.mark.parametrize("licences, expected", [
    (["Apache-2.0", "MIT"], "Apache-2.0"),
    (["MIT"], "MIT"),
    (["Apache-2.0", "CC BY 4.0"], "CC BY 4.0"),
    (["Apache-2.0", "CC BY-SA 4.0", "MIT"], "CC BY-SA 4.0"),
    (["CC BY-SA 3.0", "Apache-2.0"], "CC BY-SA 4.0"),
    (["Apache-2.0", "CC BY-NC"], "CC BY-NC 4.0"),
    (["CC BY-SA 4.0", "CC BY-NC", "CC BY-SA 3.0"], "CC BY-NC-SA 4.0"),
    ([NONE_STATED, "Apache-2.0"], "Apache-2.0"),
])
def test_the_licence_is_the_strictest_of_the_sources(licences, expected):
    assert combined_licence(licences) == expected


def test_the_table_holds_every_corpus_a_pipeline_learns_from():
    assert {"csabstruct", "mulms-az", "az-cl", "coresc-art", "cl-scisumm", "all-minilm-l6-v2"} <= set(SOURCES)
    assert SOURCES["mulms-az"]["license"] == "CC BY-SA 4.0" and SOURCES["az-cl"]["license"] == "CC BY-SA 3.0"
    assert SOURCES["coresc-art"]["license"] == "CC BY-NC" and SOURCES["csabstruct"]["license"] == "Apache-2.0"
    for source in SOURCES.values():  # spaCy's meta schema: sources are dicts of strings
        assert {"name", "url", "license", "author"} <= set(source)
        assert all(isinstance(v, str) and v for v in source.values())


def test_scores_are_the_trained_components_and_requirements_are_pinned():
    performance = {"rhetoric_f_micro": 0.7, "rhetoric_fine_label_f_macro": 0.4, "encoder_p_at_1": 0.5,
                   "rhetoric_function_classifier_loss": 2.0, "ents_f": 0.9, "sents_f": 1.0, "rhetoric_p_macro": None}
    assert rhetoric_scores(performance) == {"rhetoric_f_micro": 0.7, "rhetoric_fine_label_f_macro": 0.4,
                                            "encoder_p_at_1": 0.5}
    from spacy_rhetoric.about import __version__

    requirements = load_requirements(["rhetoric_function_classifier"])
    assert requirements[0] == f"spacy_rhetoric>={__version__}"
    assert "transformers==4.53.2" in requirements
    assert any(r.startswith("torch") for r in requirements) and any(r.startswith("spacy-transformers")
                                                                    for r in requirements)
    assert not any(r.startswith(("spacy>", "spacy<", "spacy=")) for r in requirements)  # spacy package adds it
    assert "sentence-transformers==5.7.0" in load_requirements(["rhetoric_citance_linker"])


def test_a_pipeline_meta_names_its_own_identity():
    nlp = spacy.blank("en")
    nlp.add_pipe("rhetoric_section_tagger")
    parser = {"lang": "en", "name": "core_web_sm", "version": "3.8.0", "license": "MIT", "author": "Explosion",
              "sources": [{"name": "OntoNotes 5", "license": "LDC"}]}
    meta = meta_module.pipeline_meta(nlp, name="rhetoric_x", version="1.2.3", training=["csabstruct", "az-cl"],
                         performance={"rhetoric_f_micro": 0.6, "ents_f": 0.8}, parser_meta=parser)
    assert meta["name"] == "rhetoric_x" and meta["version"] == "1.2.3" and meta["license"] == "CC BY-SA 4.0"
    names = [s["name"] for s in meta["sources"]]
    assert names[:3] == ["CSAbstruct", SOURCES["az-cl"]["name"], SOURCES["ferosa"]["name"]]
    assert names[3:] == ["en_core_web_sm 3.8.0", "OntoNotes 5"]
    assert meta["performance"] == {"rhetoric_f_micro": 0.6}
    assert "CSAbstruct (Apache-2.0)" in meta["description"] and "state no licence" in meta["description"]
    with_art = meta_module.pipeline_meta(nlp, name="rhetoric_x", version="1", training=["mulms-az", "coresc-art"])
    assert with_art["license"] == "CC BY-NC-SA 4.0"
    assert meta_module.pipeline_meta(nlp, name="x", version="1", licence="CC0")["license"] == "CC0"
    for bad in ("core_web_sm", "rhetoric-pipeline", ""):
        with pytest.raises(RhetoricError, match="identifier"):
            meta_module.pipeline_meta(nlp, name=bad, version="1")
    with pytest.raises(RhetoricError, match="unknown training source"):
        meta_module.pipeline_meta(nlp, name="x", version="1", training=["csabstract"])


def test_assemble_writes_the_pipelines_own_meta(tmp_path):
    """assemble: never the parser's name, licence or NER scores; the scores of
    the sourced classifier; the MiniLM model listed where the config names it."""
    from spacy_rhetoric.apps.assemble import CLASSIFIER, assemble, save_pipeline

    classifier = four_papers_pipeline()
    classifier.meta["performance"] = {"rhetoric_f_micro": 0.5, "rhetoric_function_classifier_loss": 3.0}
    nlp, _ = assemble("en_core_web_sm", [(classifier, CLASSIFIER)], phrases=[("Aim", "we aim to")],
                      name="rhetoric_tiny", version="0.0.2", training=["csabstruct", "mulms-az"])
    save_pipeline(nlp, tmp_path / "pipeline")
    meta = spacy.load(tmp_path / "pipeline").meta
    assert (meta["name"], meta["version"], meta["license"]) == ("rhetoric_tiny", "0.0.2", "CC BY-SA 4.0")
    assert meta["author"] == "spacy_rhetoric" and meta["performance"] == {"rhetoric_f_micro": 0.5}
    names = [s["name"] for s in meta["sources"]]
    assert names[:2] == ["CSAbstruct", "MuLMS-AZ"] and SOURCES["iwatsuki2021"]["name"] in names
    assert any(n.startswith("en_core_web_sm") for n in names)
    assert meta["requirements"][0].startswith("spacy_rhetoric>=")


def test_the_workflows_name_known_sources():
    """Every ``assemble --sources`` of project.yml names keys of the table."""
    import re
    from pathlib import Path

    import srsly

    config = srsly.read_yaml(Path(__file__).resolve().parent.parent / "project.yml")
    lines = [line for cmd in config["commands"] for line in cmd.get("script", []) if " assemble " in line]
    assert lines and all("--sources" in line for line in lines)
    for line in lines:
        value = re.search(r"--sources (\S+)", line).group(1)
        if value == "${vars.training_sources}":
            value = config["vars"]["training_sources"]
        assert set(value.split(",")) <= set(SOURCES), value
