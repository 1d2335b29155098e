"""The member-fitting step (``pipeline/fitting.py``): ``nlp.initialize()``
sizes and labels and fits nothing; ``spacy train`` fits the mixture's
members from the config (``[training.before_update]``
``spacy_rhetoric.fit_members.v1``), each with the settings of its block,
which the member records; the same ``${system.seed}`` gives the same labels.
On tiny inline papers and a tiny random BERT, offline."""
import random
from dataclasses import fields
from pathlib import Path

import numpy
import pytest
import spacy
from helpers import save_tiny_bert, sectioned_doc
from spacy.tokens import DocBin
from spacy.training import Example

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.ml.finetuned import FinetunedSettings, FinetunedShim
from spacy_rhetoric.ml.members import fitted_members, is_fitted
from spacy_rhetoric.ml.tfidf_member import TfidfShim
from spacy_rhetoric.pipeline.fitting import fit_pipeline_members, make_fit_members
from spacy_rhetoric.resources import config_path

CLASSIFIER = "rhetoric_function_classifier"
MEMBERS = f"components.{CLASSIFIER}.model.members"
# (sentences, sections, headings, labels): papers, then abstracts (one section: no paper)
PAPERS = [
    (["Parsing is an old task.", "We train a graph parser.", "Accuracy rises by two points.", "Thanks to all."],
     ["introduction", "method", "results", "other"], ["1 Introduction", "2 Method", "3 Results", "Acknowledgments"],
     ["background", "method", "result", "other"]),
    (["Many parsers exist.", "We tune the parser on news.", "Recall rises too.", "We thank the reviewers."],
     ["introduction", "method", "results", "other"], ["1 Introduction", "2 Method", "3 Results", "Acknowledgments"],
     ["background", "method", "result", "other"]),
    (["Treebanks are costly.", "We project trees across languages.", "The scores rise on every language."],
     ["introduction", "method", "results"], ["1 Introduction", "2 Method", "3 Results"],
     ["background", "method", "result"]),
]
ABSTRACTS = [
    (["Parsing matters.", "We train a parser.", "Accuracy rises."], ["abstract"] * 3, ["Abstract"] * 3,
     ["background", "method", "result"]),
    (["Treebanks are rare.", "We project the trees.", "The parser improves."], ["abstract"] * 3, ["Abstract"] * 3,
     ["background", "method", "result"]),
]


def docs(nlp, rows, labels=True):
    return [sectioned_doc(nlp, s, sec, h, lab if labels else None) for s, sec, h, lab in rows]


def write_corpus(path: Path) -> Path:
    nlp = spacy.blank("en")
    path.mkdir(parents=True)
    for name, rows in (("train", PAPERS + ABSTRACTS), ("dev", PAPERS[:1] + ABSTRACTS[:1])):
        DocBin(store_user_data=True, docs=docs(nlp, rows)).to_disk(path / f"{name}.spacy")
    return path


def overrides(corpus: Path, bert: Path, seed: int = 0):
    """``configs/classifier.cfg`` made tiny: a few steps, a tiny BERT as the
    fine-tuned member's encoder, every term kept by the TF-IDF members."""
    return {"paths.train": str(corpus / "train.spacy"), "paths.dev": str(corpus / "dev.spacy"),
            "system.seed": seed, "training.max_steps": 2, "training.eval_frequency": 2,
            f"{MEMBERS}.finetuned.name": str(bert), f"{MEMBERS}.finetuned.frozen_layers": 0,
            f"{MEMBERS}.finetuned.max_length": 32, f"{MEMBERS}.finetuned.epochs": 3.0,
            f"{MEMBERS}.finetuned.batch_size": 4, f"{MEMBERS}.finetuned.vectors.width": 8,
            f"{MEMBERS}.tfidf.min_df": 1, f"{MEMBERS}.abstracts.min_df": 1}


def test_initialize_of_the_default_config_fits_nothing(tmp_path, monkeypatch):
    """``nlp.initialize()`` of ``configs/classifier.cfg`` labels the pipe and
    runs no member's fit (the fine-tuned one would load MiniLM and train);
    the members stay unfitted until the member-fitting step."""
    calls = []

    def fit(self, member, *args, **kwargs):
        calls.append(member.name)

    monkeypatch.setattr(TfidfShim, "fit", fit)
    monkeypatch.setattr(FinetunedShim, "fit", fit)
    config = spacy.util.load_config(config_path("classifier"), overrides={
        "paths.train": str(tmp_path / "none.spacy"), "paths.dev": str(tmp_path / "none.spacy")}, interpolate=False)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    examples = [Example(d, d) for d in docs(nlp, PAPERS + ABSTRACTS)]
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe(CLASSIFIER)
    members = fitted_members(pipe.model)
    assert pipe.labels == ("background", "method", "other", "result")
    assert [m.name for m in members] == ["tfidf_expert", "tfidf_expert_others", "finetuned_expert"]
    assert calls == [] and not any(is_fitted(m) for m in members)
    # the step, as spacy train calls it before its updates: not at a later step, then every member once
    step = make_fit_members()
    step(nlp, {"step": 1, "epoch": 0})
    assert calls == []
    assert fit_pipeline_members(nlp, examples) == {CLASSIFIER: {
        "tfidf_expert": {"docs": 3, "sentences": 11, "labelled": 11},
        "tfidf_expert_others": {"docs": 2, "sentences": 6, "labelled": 6},
        "finetuned_expert": {"docs": 5, "sentences": 17, "labelled": 17}}}  # all_docs.v1: papers and abstracts
    assert calls == ["tfidf_expert", "tfidf_expert_others", "finetuned_expert"]


def block_settings(block):
    """A member block's settings (without its nested blocks)."""
    return {k: v for k, v in block.items() if not k.startswith("@") and not isinstance(v, dict)}


def labels_of(nlp, corpus):
    doc = next(iter(DocBin().from_disk(corpus / "dev.spacy").get_docs(nlp.vocab)))
    return [(s._.rhetoric_label, s._.rhetoric_scores) for s in nlp(doc.text).sents]


def test_spacy_train_fits_the_members_with_the_settings_of_their_blocks_and_a_seed_repeats(tmp_path):
    from spacy.cli.train import train

    corpus = write_corpus(tmp_path / "corpus")
    bert = save_tiny_bert(tmp_path / "bert")
    outputs = []
    for run in ("a", "b"):
        train(config_path("classifier"), tmp_path / run, overrides=overrides(corpus, bert, seed=7))
        outputs.append(spacy.load(tmp_path / run / "model-last"))
    nlp = outputs[0]
    config = nlp.config.interpolate()
    blocks = config["components"][CLASSIFIER]["model"]["members"]
    assert config["training"]["before_update"]["@callbacks"] == "spacy_rhetoric.fit_members.v1"
    members = {m.name: m for m in fitted_members(nlp.get_pipe(CLASSIFIER).model)}
    assert all(is_fitted(m) for m in members.values())
    # every setting of the fine-tune is in its block, and the member recorded the block's values
    finetuned, block = members["finetuned_expert"], blocks["finetuned"]
    assert {f.name for f in fields(FinetunedSettings)} <= set(block)
    assert block["seed"] == 7 and block["epochs"] == 3.0
    settings = block_settings(block)
    # how it predicts (the number format) is held by its shim from the config it is loaded with
    assert finetuned.shims[0].precision == settings.pop("precision") == "auto"
    for key, value in settings.items():
        assert finetuned.attrs[key] == value, key
    assert finetuned.attrs["docs"] == "all" and block["learn_from"]["@misc"] == "spacy_rhetoric.all_docs.v1"
    shim = finetuned.shims[0]
    assert (shim.cfg["model_name"], shim.cfg["frozen_layers"], shim.cfg["max_length"]) == \
        (block["name"], block["frozen_layers"], block["max_length"])
    assert (shim.cfg["vector_width"], shim.cfg["vector_pooling"]) == (block["vectors"]["width"],
                                                                      block["vectors"]["pooling"])
    # the TF-IDF members: their attrs and the stored scikit-learn settings
    for name, key, docs_of in (("tfidf_expert", "tfidf", "papers"), ("tfidf_expert_others", "abstracts", "others")):
        member, block = members[name], blocks[key]
        assert {"ngram_size", "min_df", "C", "neighbour_weight", "class_weight", "max_iter", "use_sections",
                "normalize_digits"} == set(block_settings(block)) - {"cues"}  # cues: null or a nested block
        for setting, value in block_settings(block).items():
            assert member.attrs[setting] == value, (name, setting)
        assert member.attrs["docs"] == docs_of
        # the cue block (ml/agency.py), nested: its settings recorded as they were
        cues = block.get("cues")
        assert member.attrs["cues"] == (block_settings(cues) if cues else None)
        assert (cues is not None) == (key == "tfidf")
        state = member.shims[0].cfg["state"]
        assert {k: state["classifier"]["params"][k] for k in ("C", "max_iter", "class_weight")} == \
            {k: block[k] for k in ("C", "max_iter", "class_weight")}
        assert state["vectorizer"]["params"]["min_df"] == block["min_df"]
        assert list(state["vectorizer"]["params"]["ngram_range"]) == [1, block["ngram_size"]]
    # two trainings with the same seed: the same labels and scores
    first, second = (labels_of(n, corpus) for n in outputs)
    assert [label for label, _ in first] == [label for label, _ in second]
    for (_, a), (_, b) in zip(first, second):
        assert a.keys() == b.keys() and numpy.allclose(list(a.values()), list(b.values()), atol=1e-6)


def test_the_fitting_step_leaves_the_process_random_state_as_it_was(tmp_path):
    """No process-global state changes: torch's, python's and numpy's
    generators are where they were after the members were fitted."""
    import torch

    bert = save_tiny_bert(tmp_path / "bert")
    config = spacy.util.load_config(config_path("classifier"), overrides={
        "paths.train": str(tmp_path / "none.spacy"), "paths.dev": str(tmp_path / "none.spacy"),
        f"{MEMBERS}.finetuned.name": str(bert), f"{MEMBERS}.finetuned.frozen_layers": 0,
        f"{MEMBERS}.finetuned.max_length": 32, f"{MEMBERS}.finetuned.batch_size": 4,
        f"{MEMBERS}.tfidf.min_df": 1, f"{MEMBERS}.abstracts.min_df": 1}, interpolate=False)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    examples = [Example(d, d) for d in docs(nlp, PAPERS + ABSTRACTS)]
    nlp.initialize(lambda: examples)
    torch.manual_seed(123)
    random.seed(5)
    numpy.random.seed(6)
    before = torch.random.get_rng_state(), random.getstate(), numpy.random.get_state()[1].copy()
    fit_pipeline_members(nlp, examples)
    assert all(is_fitted(m) for m in fitted_members(nlp.get_pipe(CLASSIFIER).model))
    assert torch.equal(torch.random.get_rng_state(), before[0])
    assert random.getstate() == before[1] and numpy.array_equal(numpy.random.get_state()[1], before[2])


def test_a_min_df_above_the_data_is_an_error_not_a_silent_change():
    from spacy_rhetoric.errors import RhetoricError
    from spacy_rhetoric.ml.tfidf_member import tfidf_expert

    nlp = spacy.blank("en")
    member = tfidf_expert(min_df=50)
    examples = [Example(d, d) for d in docs(nlp, PAPERS)]
    nlp.add_pipe("sentencizer")
    from thinc.api import NumpyOps

    from spacy_rhetoric.ml.members import fit_members
    from spacy_rhetoric.ml.pooling import doc_sentences, make_indices

    X = ([e.reference for e in examples], make_indices(NumpyOps(), [doc_sentences(e.reference)[1] for e in examples]))
    gold = [lab for _, _, _, labels in PAPERS for lab in labels]
    with pytest.raises(RhetoricError, match="min_df"):
        fit_members([member], X, gold, ["background", "method", "other", "result"])


def test_refit_members_fits_as_the_member_fitting_step():
    """``evaluation.pipelines.refit_members`` is the pipe's ``fit_members``:
    members forgotten and refitted on the same examples give the same
    probabilities as the member-fitting step gave."""
    from helpers import FULL, TRAIN, train_nlp

    from spacy_rhetoric.evaluation.pipelines import refit_members

    nlp = train_nlp(**FULL)
    pipe = nlp.get_pipe("rhetoric_function_classifier")
    examples = [Example(sectioned_doc(nlp, *row[:3]), sectioned_doc(nlp, *row)) for row in TRAIN]
    members = [m for m in fitted_members(pipe.model) if is_fitted(m)]
    assert members
    doc = sectioned_doc(nlp, *TRAIN[0][:3])
    before = [s._.rhetoric_scores for s in nlp(doc).sents]
    for member in members:
        member.shims[0].unfit()
    assert not any(is_fitted(m) for m in members)
    refit_members(pipe, lambda: examples, members)
    assert all(is_fitted(m) for m in members)
    after = [s._.rhetoric_scores for s in nlp(sectioned_doc(nlp, *TRAIN[0][:3])).sents]
    assert after == before
