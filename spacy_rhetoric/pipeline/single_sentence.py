"""``rhetoric_single_sentence``: the whole Doc is one sentence, kept whole.

Every token gets a preset ``is_sent_start`` (``True`` on the first token,
``False`` on every other one). spaCy's dependency parser treats preset values
as hard constraints (it may only add boundaries where ``is_sent_start`` is
``None``), so a parser after this component can neither split the text nor
merge it with a neighbour: one sentence, one root. Put it first; the corpus
builder (``spacy-rhetoric label``) does, so that ``nlp.pipe`` takes plain
strings (``n_process`` workers then receive texts, not pickled Docs, which
carry the whole Vocab).
"""
from spacy.language import Language
from spacy.tokens import Doc


def preset_single_sentence(doc: Doc) -> Doc:
    """Mark ``doc`` as exactly one sentence: the first token starts it, no
    other token may (a parser after this keeps the boundaries)."""
    for i, token in enumerate(doc):
        token.is_sent_start = i == 0
    return doc


@Language.component("rhetoric_single_sentence", assigns=["token.is_sent_start"])
def single_sentence_component(doc: Doc) -> Doc:
    """Pipeline component: the whole Doc is one sentence whose boundaries the
    parser must keep."""
    return preset_single_sentence(doc)


def sentence_doc(nlp: Language, text: str) -> Doc:
    """A Doc for one source sentence whose boundaries the parser must keep."""
    return preset_single_sentence(nlp.make_doc(text))
