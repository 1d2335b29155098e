"""The full-paper sentence classifier: a section-aware network and members
fitted when the pipe is initialized, each a block of the config, mixed with
weights stated per scope.

``spacy_rhetoric.FullPaperSentenceClassifier.v4`` takes its parts as nested
config blocks, as spaCy's ``TextCatEnsemble.v2`` does::

    [model]                     FullPaperSentenceClassifier.v4: forced_sections, forced_label
    [model.network]             SectionAwareNetwork.v1: trunk + section one-hot + CRF (the one member trained by gradient)
    [model.network.tok2vec]
    [model.members.tfidf]       TfidfMember.v1 (learn_from = "papers")
    [model.members.abstracts]   TfidfMember.v1 (learn_from = "others", use_sections = false)
    [model.members.finetuned]   FinetunedMember.v1
    [model.weights.paper_body]      network = 0.2, tfidf = 0.4, finetuned = 0.4
    [model.weights.paper_abstract]  ...
    [model.weights.other_docs]      network = 0.4, abstracts = 0.6

The members (``ml/members.py``; ``ml/tfidf_member.py``: TF-IDF logistic
regressions fitted by scikit-learn; ``ml/finetuned.py``: the top layers of a sentence-transformers
model fine-tuned on the papers' sentences) are fitted by
``rhetoric_function_classifier.initialize`` and have no loss: in training
the model is the network alone. A member learns from the docs of its
``learn_from`` ("papers": full papers, ``segments.is_paper``; "others":
abstracts and plain text).

The weights: one table per scope of a sentence -- ``paper_body`` (a full
paper's sentences outside its abstract), ``paper_abstract`` (a full paper's
abstract), ``other_docs`` (abstracts and plain text) -- each summing to 1,
naming the network and members; a name left out has weight 0 there. At
prediction each sentence's probabilities are the weighted sum of those of
the network and members with these exact weights (``mixture_weights`` reads
them back from a built model); only a member not fitted (no training doc of
its kind) gives its weight to the network. Adding a member: register a
builder that returns a fitted member (``members.fitted_member``) and add its
block and its weights to the config.

Why a mixture: on full papers the network and a lexical model of the
sentence, its neighbours, its section and its position make different
errors, and members that each learn from their own objective keep their own
view, as in an ensemble.
"""
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from ..section_headings import BACK_MATTER, OTHER
from .finetuned import VectorHead, finetuned_expert
from .members import is_fitted, is_fitted_member, member_vector_width
from .sections import _section_aware_model, section_aware_layers
from .segments import paper_rows
from .sequence import crf_layer, emitters
from .tfidf_member import tfidf_expert

NETWORK = "network"
SCOPES = ("paper_body", "paper_abstract", "other_docs")
ABSTRACT = "abstract"


def scope_rows(X: Tuple[List[Doc], Ragged]) -> Dict[str, numpy.ndarray]:
    """Per scope, 1.0 on the sentence rows of ``X`` in it (module docstring)."""
    papers = paper_rows(X)
    body = paper_rows(X, (ABSTRACT,))
    return {"paper_body": body, "paper_abstract": papers - body, "other_docs": 1.0 - papers}


def _check_weights(weights: Mapping[str, Mapping[str, float]], names: Sequence[str],
                   learn_from: Mapping[str, str]) -> Dict[str, Dict[str, float]]:
    unknown = set(weights) - set(SCOPES)
    if unknown or not weights:
        raise RhetoricError(f"mixture weights: scopes are {list(SCOPES)}, got {sorted(weights)}")
    out = {}
    for scope in SCOPES:
        table = {str(k): float(v) for k, v in dict(weights.get(scope, {NETWORK: 1.0})).items()}
        stray = set(table) - set(names)
        if stray:
            raise RhetoricError(f"mixture weights.{scope}: {sorted(stray)} is no member (members: {list(names)})")
        if any(v < 0 for v in table.values()) or abs(sum(table.values()) - 1.0) > 1e-3:
            raise RhetoricError(f"mixture weights.{scope} must be >= 0 and sum to 1, got {table}")
        # a member speaks only on docs of the kind it learned from (and the abstracts' also on a paper's abstract)
        barred = [name for name, value in table.items() if value > 0 and name != NETWORK and
                  scope == ("paper_body" if learn_from[name] == "others" else "other_docs")]
        if barred:
            raise RhetoricError(f"mixture weights.{scope}: {barred} learn from other docs and cannot speak there")
        out[scope] = table
    return out


def experts(network: Model, members: Mapping[str, Model], weights: Mapping[str, Mapping[str, float]],
            nO: Optional[int] = None) -> Model:
    """The network and the fitted ``members`` (by name) mixed with the
    per-scope ``weights`` (module docstring); in training the network alone."""
    if is_fitted_member(network):
        raise RhetoricError("experts: the network is the member trained by gradient, not a fitted one")
    bad = [name for name, m in members.items() if not isinstance(m, Model) or not is_fitted_member(m)]
    if bad or NETWORK in members:
        raise RhetoricError(f"experts: members must be fitted members named other than {NETWORK!r}, got {bad}")
    with_vectors = [name for name, m in members.items() if getattr(m.shims[0], "vectors", None) is not None]
    if len(with_vectors) > 1:
        raise RhetoricError(f"experts: one member may have a vector head, got {with_vectors}")
    names = [NETWORK, *members]
    table = _check_weights(weights, names, {name: m.attrs.get("docs", "papers") for name, m in members.items()})
    for name, member in members.items():  # each member computes only the rows it is weighed on
        if member.attrs.get("docs", "papers") == "others":
            member.attrs["paper_sections"] = [ABSTRACT] if table["paper_abstract"].get(name, 0) > 0 else []
        else:
            member.attrs["silent_sections"] = [] if table["paper_abstract"].get(name, 0) > 0 else [ABSTRACT]
    return Model("experts", _experts_forward, init=_experts_init, layers=[network, *members.values()],
                 dims={"nO": nO}, attrs={"names": names, "weights": table})


def mixture_weights(model: Model) -> Dict[str, Dict[str, float]]:
    """The per-scope weights the mixture in ``model`` runs with."""
    node = next(n for n in model.walk() if n.name == "experts")
    return {scope: dict(table) for scope, table in node.attrs["weights"].items()}


def _experts_init(model: Model, X=None, Y=None) -> None:
    nO = model.get_dim("nO") if model.has_dim("nO") else None
    for member in model.layers:
        if nO is not None:
            target = member.get_ref("output") if member.has_ref("output") else member
            target.set_dim("nO", nO)
        member.initialize(X=X)


def vector_width(model: Model) -> int:
    """Width of the sentence vectors the classifier ``model`` gives after
    its probabilities at prediction (the trunk's vector head,
    ``VectorHead.v1``; 0: none, or its member not fitted)."""
    return sum(member_vector_width(node) for node in model.walk() if is_fitted_member(node))


# experts node id -> the list that receives each prediction batch's member outputs (member_outputs)
_RECORDING: Dict[int, List[Tuple[Tuple[List[Doc], Ragged], numpy.ndarray]]] = {}


@contextmanager
def member_outputs(model: Model) -> Iterator[List[Tuple[Tuple[List[Doc], Ragged], numpy.ndarray]]]:
    """Each member's own output, from the passes that give the mixture: while
    the context is open, every prediction batch of the ``experts`` layer in
    ``model`` runs every member (also one weighed 0 on the batch) and appends
    ``(X, outputs)`` to the yielded list: ``outputs`` a host array
    ``[n_members, n_rows, n_labels]``, the network first, then the members in
    the order of ``attrs["names"]`` (vector columns left out). The mixed
    output is made from the same member outputs, so the pipeline's labels
    are those of a pass without the context."""
    node = next(n for n in model.walk() if n.name == "experts")
    batches: List[Tuple[Tuple[List[Doc], Ragged], numpy.ndarray]] = []
    _RECORDING[node.id] = batches
    try:
        yield batches
    finally:
        _RECORDING.pop(node.id, None)


def _experts_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool) -> Tuple[Floats2d, Callable]:
    """In training the network's probabilities; at prediction the mixed
    probabilities, and after them the vectors of the member with a vector
    head (its one pass gives both)."""
    network = model.layers[0]
    if is_train:  # the fitted members have nothing to learn
        return network(X, is_train)
    record = _RECORDING.get(model.id)
    outputs = []
    scopes = scope_rows(X)
    rows = []
    for name, member in zip(model.attrs["names"], model.layers):
        row = sum(scopes[s] * model.attrs["weights"][s].get(name, 0.0) for s in SCOPES)
        rows.append(row if not is_fitted_member(member) or is_fitted(member) else 0.0 * row)
    rows[0] = rows[0] + sum(scopes[s] for s in SCOPES) - sum(rows)  # an unfitted member's weight: the network's
    mixed, vectors = None, None
    for member, row in zip(model.layers, rows):
        width = member_vector_width(member) if member is not network else 0
        if member is not network and not row.any() and not width and record is None:
            continue  # weighed 0 on every row of the batch and no vectors: not run
        out = member.predict(X)
        if width:
            out, vectors = out[:, : out.shape[1] - width], out[:, out.shape[1] - width :]
        outputs.append(out)
        probs = out * model.ops.asarray2f(row.astype("f")[:, None])
        mixed = probs if mixed is None else mixed + probs
    if record is not None:
        record.append((X, numpy.stack([model.ops.to_numpy(out) for out in outputs]).astype("float32")))
    if vectors is not None:
        mixed = model.ops.xp.concatenate([mixed, vectors], axis=1)
    return mixed, lambda dY: []


@registry.architectures("spacy_rhetoric.SectionAwareNetwork.v1")
def build_section_aware_network(tok2vec: Model[List[Doc], List[Floats2d]], pooling: str = "mean+max",
                                width: int = 128, encoder: str = "cnn", depth: int = 2, window_size: int = 1,
                                maxout_pieces: int = 3, dropout: float = 0.1, hidden_size: int = 0,
                                use_sections: bool = True, section_scale: float = 5.0, acknowledgements: bool = True,
                                ngram_size: int = 2, ngram_length: int = 2 ** 18, decode: str = "marginal",
                                head_scale: float = 1.0) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """The mixture's network: ``SectionAwareSentenceClassifier.v3``'s layers
    (sections as segments and positions; the same arguments) up to its CRF,
    without the back-matter rule (the mixture applies it to the mixed
    probabilities). Its refs: "tok2vec", "pooler"."""
    pooler, layers = section_aware_layers(
        tok2vec, pooling=pooling, width=width, encoder=encoder, depth=depth, window_size=window_size,
        maxout_pieces=maxout_pieces, dropout=dropout, hidden_size=hidden_size, use_sections=use_sections,
        section_scale=section_scale, acknowledgements=acknowledgements, positions="sections")
    crf = crf_layer(emitters(layers, ngram_size, ngram_length, "sections"), decode=decode, head_scale=head_scale)
    crf.set_ref("tok2vec", tok2vec)
    crf.set_ref("pooler", pooler)
    crf.attrs.update({"use_sections": bool(use_sections), "acknowledgements": bool(acknowledgements)})
    return crf


@registry.architectures("spacy_rhetoric.TfidfMember.v1")
def build_tfidf_member(learn_from: str = "papers", ngram_size: int = 2, min_df: int = 2, C: float = 5.0,
                       neighbour_weight: float = 0.5, class_weight: Optional[str] = "balanced",
                       use_sections: bool = True, normalize_digits: bool = False) -> Model:
    """A member fitted by scikit-learn at initialize: TF-IDF (sublinear tf)
    1..``ngram_size``-grams (``min_df``) of the sentence and of its
    neighbours (``neighbour_weight`` times), the section one-hot
    (``use_sections``) and the position buckets -> ``LogisticRegression(C,
    class_weight)`` (``tfidf_member.tfidf_expert``). ``learn_from``: "papers" or
    "others" (abstracts and plain text). ``normalize_digits``: every digit
    reads 0."""
    if learn_from not in ("papers", "others"):
        raise RhetoricError(f"TfidfMember.v1: learn_from is 'papers' or 'others', got {learn_from!r}")
    return tfidf_expert(ngram_size, min_df, neighbour_weight, C, class_weight, docs=learn_from,
                        use_sections=use_sections, normalize_digits=normalize_digits)


@registry.misc("spacy_rhetoric.VectorHead.v1")
def build_vector_head(loss: Any, width: int = 256, weight: float = 1.0, label_field: str = "fine_label",
                      pooling: str = "pair") -> VectorHead:
    """The trunk's vector head (``finetuned.VectorHead``): the fine-tuned
    member's pooled states -> linear ``width`` -> ``sent._.rhetoric_vector``,
    trained with the metric ``loss`` (a nested block, e.g.
    ``spacy_rhetoric.MultiSimilarityLoss.v1``) times ``weight`` beside the
    classifier's cross-entropy, on each sentence's ``label_field`` gold
    value (else its coarse gold label). ``pooling``: ``"pair"`` (the mean
    over the sentence and its context, as the label head reads) or
    ``"sentence"`` (the mean over the sentence's own word pieces)."""
    from ..losses.base import MetricLoss

    if not isinstance(loss, MetricLoss):
        raise RhetoricError(f"VectorHead.v1: loss must be one of the spacy_rhetoric metric losses, got {loss!r}")
    return VectorHead(width=int(width), loss=loss, weight=float(weight), label_field=str(label_field),
                      pooling=str(pooling))


@registry.architectures("spacy_rhetoric.FinetunedMember.v1")
def build_finetuned_member(name: str = "sentence-transformers/all-MiniLM-L6-v2", epochs: float = 1.0,
                           frozen_layers: int = 2, learn_rate: float = 8e-5, batch_size: int = 16,
                           max_length: int = 128, context_chars: int = 60, int8: bool = False,
                           balance_sources: bool = True, source_power: float = 0.0,
                           vectors: Optional[VectorHead] = None) -> Model:
    """A member fine-tuned at initialize on the full papers' sentences: the
    top layers of the Hugging Face encoder ``name`` (resolved offline; the
    bottom ``frozen_layers`` frozen) over the sentence paired with its
    heading and neighbours, beside section + position -> linear -> softmax,
    ``epochs`` passes (``learn_rate``, ``batch_size``, pairs of
    ``max_length`` word pieces; of each neighbour, the ``context_chars``
    characters next to the sentence); ``ml/finetuned.py``. ``balance_sources``:
    papers of several corpora (``doc._.rhetoric_source``) weigh the same in
    its draws of sentences, or, with ``source_power`` p > 0, each corpus in
    proportion to its size to the power p (0.5: the square root). ``int8``: at
    prediction on a CPU its linear layers run in int8 (dynamic quantization).
    ``vectors``: a ``[...vectors]`` block (``VectorHead.v1``): the same pass
    also gives every sentence's ``rhetoric_vector`` -- one trunk, two heads."""
    return finetuned_expert(name, epochs=epochs, learn_rate=learn_rate, batch_size=batch_size,
                            max_length=max_length, frozen_layers=frozen_layers, context_chars=context_chars,
                            int8=int8, vectors=vectors, balance_sources=balance_sources, source_power=source_power)


@registry.architectures("spacy_rhetoric.FullPaperSentenceClassifier.v4")
def build_full_paper_sentence_classifier(network: Model[Tuple[List[Doc], Ragged], Floats2d],
                                         members: Dict[str, Any], weights: Dict[str, Dict[str, float]],
                                         forced_sections: Sequence[str] = (BACK_MATTER,),
                                         forced_label: str = OTHER,
                                         nO: Optional[int] = None) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """``network`` (``SectionAwareNetwork.v1``) and the fitted ``members``
    (blocks by name, each a builder's fitted member; typed ``Any`` as
    confection checks a dict of blocks) mixed with the per-scope ``weights`` (module
    docstring); sentences in ``forced_sections`` get ``forced_label`` by
    rule, as in ``SectionAwareSentenceClassifier.v3``."""
    mixture = experts(network, members, weights, nO=nO)
    return _section_aware_model(mixture, network.get_ref("tok2vec"), network.get_ref("pooler"), mixture,
                                forced_sections, forced_label, network.attrs["use_sections"],
                                network.attrs["acknowledgements"])
