"""The registered architectures whose arguments are declared once
(``spacy_rhetoric.ml.assembly``): their signatures, which spaCy's configs are
checked against, stay what each version was registered with."""
import inspect

import pytest
from spacy.util import registry

import spacy_rhetoric  # noqa: F401 - registers the architectures
from spacy_rhetoric.ml.assembly import architecture

TRUNK = [("tok2vec", inspect.Parameter.empty), ("encoder", inspect.Parameter.empty), ("pooling", "mean"),
         ("width", 128), ("maxout_pieces", 3), ("dropout", 0.1)]
SECTIONS = [("hidden_size", 0), ("use_sections", True), ("forced_sections", ("back matter",)),
            ("forced_label", "other"), ("section_scale", 1.0), ("acknowledgements", False)]
HEAD = [("ngram_size", 2), ("ngram_length", 2 ** 18), ("decode", "marginal"), ("head_scale", 1.0)]
NO = [("nO", None)]
EXPECTED = {
    "ContextSentenceClassifier.v1": TRUNK + NO,
    "SequenceSentenceClassifier.v1": TRUNK + HEAD + NO,
    "SectionAwareSentenceClassifier.v3": TRUNK + SECTIONS + HEAD + [("segments", "sections"),
                                                                    ("positions", "sections")] + NO,
    "ContextSentenceEncoder.v1": [*TRUNK[:3], ("width", 256), TRUNK[4], ("projection_width", 256),
                                  ("dropout", 0.1)],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_registered_signature_unchanged(name):
    func = registry.architectures.get(f"spacy_rhetoric.{name}")
    params = inspect.signature(func).parameters.values()
    assert [(p.name, p.default) for p in params] == EXPECTED[name]
    # confection builds the config schema from the type hints too
    assert set(func.__annotations__) == {p.name for p in params} | {"return"}


def test_architecture_binds_positional_and_keyword_arguments():
    seen = {}

    @architecture("tok2vec", "width", "nO", width=7)
    def build(**kwargs):
        seen.update(kwargs)
        return "model"

    assert build("t2v", nO=3) == "model"
    assert seen == {"tok2vec": "t2v", "width": 7, "nO": 3}
    with pytest.raises(TypeError):
        build("t2v", unknown=1)


def shipped_architectures():
    """The architectures setup.py registers (entry points) and those the
    shipped configs (configs/*.cfg) name."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    setup = (root / "setup.py").read_text(encoding="utf8")
    block = setup[setup.index('"spacy_architectures"'):]
    block = block[: block.index("]")]
    registered = set(re.findall(r'"(spacy_rhetoric\.[\w.]+) =', block))
    used = set()
    for cfg in (root / "configs").glob("*.cfg"):
        used |= set(re.findall(r'@architectures = "(spacy_rhetoric\.[\w.]+)"', cfg.read_text(encoding="utf8")))
    return registered, used


def test_every_registered_architecture_is_used_by_a_shipped_config():
    """No registered architecture that no shipped config uses (delete it
    before a release); the one exception is the architecture spaCy writes
    into an assembled pipeline's config when it gives a component its own
    copy of a chunked transformer (``replace_listeners``), and the context
    encoder blocks the shipped configs do not choose (``ml.context``: every
    shipped config takes the CNN; the BiLSTM is the other choice of the same
    ``encoder`` block, trained by the tests)."""
    from spacy_rhetoric.ml.transformer import chunked_replace_listener_cfg

    registered, used = shipped_architectures()
    assert "spacy_rhetoric.FullPaperSentenceClassifier.v4" in registered
    written = chunked_replace_listener_cfg(
        {"@architectures": "spacy_rhetoric.ChunkedTransformerModel.v1", "name": "m", "max_windows_per_pass": 8,
         "get_spans": {}, "tokenizer_config": {}},
        {"@architectures": "spacy-transformers.TransformerListener.v1", "pooling": {}, "grad_factor": 1.0})
    assert registered - used == {written["@architectures"], "spacy_rhetoric.ContextBiLSTM.v1"}
    assert used <= registered
