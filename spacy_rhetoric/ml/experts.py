"""The full-paper sentence classifier: a section-aware network and fitted
members, each a block of the config, mixed with weights stated per scope.

``spacy_rhetoric.FullPaperSentenceClassifier.v4`` takes its parts as nested
config blocks, as spaCy's ``TextCatEnsemble.v2`` does::

    [model]                     FullPaperSentenceClassifier.v4: forced_sections, forced_label
    [model.network]             SectionAwareNetwork.v1: trunk + section one-hot + CRF (the one member trained by gradient)
    [model.network.tok2vec]
    [model.members.tfidf]       TfidfMember.v1 (+ [.learn_from] spacy_rhetoric.papers.v1)
    [model.members.abstracts]   TfidfMember.v1 (+ [.learn_from] spacy_rhetoric.other_docs.v1; use_sections = false)
    [model.members.finetuned]   FinetunedMember.v1 (+ [.learn_from], [.vectors]; seed = ${system.seed})
    [model.weights.paper_body]      network = 0.2, tfidf = 0.4, finetuned = 0.4
    [model.weights.paper_abstract]  ...
    [model.weights.other_docs]      network = 0.4, abstracts = 0.6

The members (``ml/members.py``: the :class:`members.Member` interface;
``ml/tfidf_member.py``: TF-IDF logistic regressions fitted by scikit-learn;
``ml/finetuned.py``: the top layers of a sentence-transformers model
fine-tuned on the papers' sentences) have no loss: in training the model is
the network alone. ``initialize`` sizes and labels and fits no member; they
are fitted by the member-fitting step (``pipeline/fitting.py``: in a
training config ``[training.before_update]``
``spacy_rhetoric.fit_members.v1``, which ``spacy train`` runs before its
first update; in code ``fit_pipeline_members(nlp, examples)``), each with
every setting stated in its block and recorded in its ``attrs``. A member
learns from the docs of its ``learn_from`` block (``spacy_rhetoric.papers.v1``:
full papers, ``segments.is_paper``; ``spacy_rhetoric.other_docs.v1``:
abstracts and plain text; ``spacy_rhetoric.all_docs.v1``: both).

The weights: one table per scope of a sentence -- ``paper_body`` (a full
paper's sentences outside its abstract), ``paper_abstract`` (a full paper's
abstract), ``other_docs`` (abstracts and plain text) -- each summing to 1,
naming the network and members; a name left out has weight 0 there. At
prediction each sentence's probabilities are the weighted sum of those of
the network and members with these exact weights (``mixture_weights`` reads
them back from a built model); only a member not fitted (no training doc of
its kind) gives its weight to the network. What the mixture derives from
the weights (the sections of a paper each member runs on,
:func:`speaking_sections`) it records in its own ``attrs["sections"]``;
it never writes into a member's settings.

Adding a member is one registered function and one config block: register
a builder that returns ``members.fitted_member(name, shim, settings,
docs=learn_from.name)``, where ``shim`` (a thinc ``Shim``) implements
:class:`members.Member` (``fit``, ``predict_with_vectors``, ``fitted``,
``vector_width``, ``unfit``) and ``settings`` are the builder's arguments;
add its entry point in ``setup.py`` and its block and weights to the config.

Why a mixture: on full papers the network and a lexical model of the
sentence, its neighbours, its section and its position make different
errors, and members that each learn from their own objective keep their own
view, as in an ensemble.
"""
import warnings
from contextlib import contextmanager
from dataclasses import fields
from inspect import Parameter, Signature
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.model import deserialize_attr
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from ..section_headings import BACK_MATTER, OTHER
from .agency import AgencyCues
from .finetuned import FinetunedSettings, VectorHead, finetuned_expert
from .members import (
    ALL_DOCS,
    OTHER_DOCS,
    PAPERS,
    DocScope,
    is_fitted,
    is_fitted_member,
    member_vector_width,
    predict_member,
)
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
                   learn_from: Mapping[str, DocScope]) -> Dict[str, Dict[str, float]]:
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
        # a member speaks only on docs of the kinds it learned from (and the abstracts' also on a paper's abstract)
        barred = [name for name, value in table.items() if value > 0 and name != NETWORK and
                  ((scope == "paper_body" and not learn_from[name].papers) or
                   (scope == "other_docs" and not learn_from[name].others))]
        if barred:
            raise RhetoricError(f"mixture weights.{scope}: {barred} do not learn from these docs and cannot speak there")
        out[scope] = table
    return out


def experts(network: Model, members: Mapping[str, Model], weights: Mapping[str, Mapping[str, float]],
            nO: Optional[int] = None, priors: Optional[Mapping[str, Mapping[str, float]]] = None) -> Model:
    """The network and the fitted ``members`` (by name) mixed with the
    per-scope ``weights`` (module docstring); in training the network alone.
    ``priors``: per scope, label -> factor: at prediction the mixed
    probabilities of the scope's rows are multiplied by them and normalised
    again (:func:`_check_priors`); the label names come from the pipe
    (``attrs["labels"]``, set when it is initialized or loaded); a label the
    classifier does not have is warned of and left out."""
    if is_fitted_member(network):
        raise RhetoricError("experts: the network is the member trained by gradient, not a fitted one")
    bad = [name for name, m in members.items() if not isinstance(m, Model) or not is_fitted_member(m)]
    if bad or NETWORK in members:
        raise RhetoricError(f"experts: members must be fitted members named other than {NETWORK!r}, got {bad}")
    with_vectors = [name for name, m in members.items() if getattr(m.shims[0], "vectors", None) is not None]
    if len(with_vectors) > 1:
        raise RhetoricError(f"experts: one member may have a vector head, got {with_vectors}")
    names = [NETWORK, *members]
    table = _check_weights(weights, names, {name: DocScope(m.attrs.get("docs", "papers")) for name, m in members.items()})
    sections = {name: speaking_sections(member.attrs.get("docs", "papers"), table, name)
                for name, member in members.items()}
    return Model("experts", _experts_forward, init=_experts_init, layers=[network, *members.values()],
                 dims={"nO": nO}, attrs={"names": names, "weights": table, "sections": sections,
                                         "priors": ConfigPriors(_check_priors(priors or {})), "labels": []})


class ConfigPriors(dict):
    """The mixture's priors as its config states them: saved with the model
    (as a plain dict) for a reader, but at load the config's value is kept (thinc's
    ``deserialize_attr`` for this type), so priors changed in a saved
    pipeline's ``config.cfg`` take effect, as a config's prediction settings do."""


@deserialize_attr.register(ConfigPriors)
def _deserialize_priors(current: ConfigPriors, value: bytes, name: str, model: Model) -> ConfigPriors:
    return current  # the config's, not the saved ones


def _check_priors(priors: Mapping[str, Mapping[str, float]]) -> Dict[str, Dict[str, float]]:
    """The mixture's label priors: scope (``SCOPES``) -> label -> factor > 0.

    Why: the members of full papers learn from corpora where a paper's aim
    is a few sentences of hundreds (AZ-CL: 195 AIM sentences of 8,042), and
    class weights (``class_weight_power``) correct the training, not the
    decision; a factor on the mixed probabilities moves the decision for one
    label in the scopes where that rarity holds, and leaves abstracts (where
    one sentence in eight states the aim: CSAbstruct train + dev, 1,569 of 13,359)
    as they are. A prediction-time
    rule, as the back-matter rule is: training is untouched."""
    unknown = set(priors) - set(SCOPES)
    if unknown:
        raise RhetoricError(f"mixture priors: scopes are {list(SCOPES)}, got {sorted(unknown)}")
    out = {}
    for scope, table in priors.items():
        table = {str(k): float(v) for k, v in dict(table).items()}
        if any(not v > 0 for v in table.values()):
            raise RhetoricError(f"mixture priors.{scope}: factors must be > 0, got {table}")
        if table:
            out[str(scope)] = table
    return out


def prior_factors(model: Model, scopes: Mapping[str, numpy.ndarray]) -> Optional[numpy.ndarray]:
    """``[n_rows, n_labels]``: each row's label factors from the mixture's
    ``priors`` and the scope it is in (None: no priors)."""
    priors = model.attrs["priors"]
    if not priors:
        return None
    labels = list(model.attrs.get("labels") or [])
    if not labels:
        raise RhetoricError("mixture priors: the mixture does not know its label names (attrs['labels'] is empty): "
                            "initialize the pipe (it names them) before predicting")
    unknown = sorted({label for table in priors.values() for label in table} - set(labels))
    if unknown:  # the default config's prior on a classifier trained on other labels: nothing to move
        warnings.warn(f"mixture priors: {unknown} are no labels of this classifier (labels: {labels}); "
                      "those factors are not applied", stacklevel=2)
    n_rows = len(next(iter(scopes.values())))
    factors = numpy.zeros((n_rows, len(labels)), dtype="float32")
    for scope in SCOPES:
        table = priors.get(scope, {})
        factors += scopes[scope][:, None] * numpy.asarray([table.get(label, 1.0) for label in labels], dtype="f")
    return factors


def speaking_sections(docs: str, table: Mapping[str, Mapping[str, float]], name: str) -> Dict[str, List[str]]:
    """What the mixture derives from its weights for member ``name`` of
    ``docs`` (recorded in the ``experts`` layer's ``attrs["sections"]``,
    never in the member's settings): the sections of a paper it is not run
    on (``silent_sections``: a paper member weighed 0 on the abstract) or
    also run on (``paper_sections``: a member of other docs weighed on a
    paper's abstract), so each member computes only the rows it is weighed
    on (``members.predict_member``)."""
    on_abstract = table["paper_abstract"].get(name, 0) > 0
    if not DocScope(docs).papers:
        return {"silent_sections": [], "paper_sections": [ABSTRACT] if on_abstract else []}
    return {"silent_sections": [] if on_abstract else [ABSTRACT], "paper_sections": []}


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
    for name, member, row in zip(model.attrs["names"], model.layers, rows):
        width = member_vector_width(member) if member is not network else 0
        if member is not network and not row.any() and not width and record is None:
            continue  # weighed 0 on every row of the batch and no vectors: not run
        out = network.predict(X) if member is network else predict_member(
            member, X, **model.attrs["sections"][name])
        if width:
            out, vectors = out[:, : out.shape[1] - width], out[:, out.shape[1] - width :]
        outputs.append(out)
        probs = out * model.ops.asarray2f(row.astype("f")[:, None])
        mixed = probs if mixed is None else mixed + probs
    if record is not None:
        record.append((X, numpy.stack([model.ops.to_numpy(out) for out in outputs]).astype("float32")))
    factors = prior_factors(model, scopes)
    if factors is not None:
        mixed = mixed * model.ops.asarray2f(factors)
        mixed = mixed / model.ops.xp.maximum(mixed.sum(axis=1, keepdims=True), 1e-12)
    if vectors is not None:
        mixed = model.ops.xp.concatenate([mixed, vectors], axis=1)
    return mixed, lambda dY: []


@registry.architectures("spacy_rhetoric.SectionAwareNetwork.v1")
def build_section_aware_network(tok2vec: Model[List[Doc], List[Floats2d]], encoder: Model[Ragged, Ragged],
                                pooling: str = "mean+max", width: int = 128, maxout_pieces: int = 3,
                                dropout: float = 0.1, hidden_size: int = 0,
                                use_sections: bool = True, section_scale: float = 5.0, acknowledgements: bool = True,
                                ngram_size: int = 2, ngram_length: int = 2 ** 18, decode: str = "marginal",
                                head_scale: float = 1.0) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """The mixture's network: ``SectionAwareSentenceClassifier.v3``'s layers
    (sections as segments and positions; the same arguments) up to its CRF,
    without the back-matter rule (the mixture applies it to the mixed
    probabilities). ``encoder``: the context block (``ml.context``:
    ``spacy_rhetoric.ContextCNN.v1``, ``ContextBiLSTM.v1``) of ``width``.
    Its refs: "tok2vec", "pooler"."""
    pooler, layers = section_aware_layers(
        tok2vec, pooling=pooling, width=width, encoder=encoder, maxout_pieces=maxout_pieces, dropout=dropout,
        hidden_size=hidden_size, use_sections=use_sections,
        section_scale=section_scale, acknowledgements=acknowledgements, positions="sections")
    crf = crf_layer(emitters(layers, ngram_size, ngram_length, "sections"), decode=decode, head_scale=head_scale)
    crf.set_ref("tok2vec", tok2vec)
    crf.set_ref("pooler", pooler)
    crf.attrs.update({"use_sections": bool(use_sections), "acknowledgements": bool(acknowledgements)})
    return crf


@registry.misc("spacy_rhetoric.papers.v1")
def papers_scope() -> DocScope:
    """``learn_from`` block: the member learns from (and speaks on) full
    papers (``segments.is_paper``)."""
    return PAPERS


@registry.misc("spacy_rhetoric.other_docs.v1")
def other_docs_scope() -> DocScope:
    """``learn_from`` block: the member learns from abstracts and plain text
    (every doc that is no full paper)."""
    return OTHER_DOCS


@registry.misc("spacy_rhetoric.all_docs.v1")
def all_docs_scope() -> DocScope:
    """``learn_from`` block: the member learns from every doc, full papers,
    abstracts and plain text alike (and may be weighed in every scope)."""
    return ALL_DOCS


@registry.architectures("spacy_rhetoric.TfidfMember.v1")
def build_tfidf_member(learn_from: DocScope, ngram_size: int = 2, min_df: int = 2, C: float = 5.0,
                       neighbour_weight: float = 0.5, class_weight: Optional[str] = "balanced",
                       max_iter: int = 3000, use_sections: bool = True, normalize_digits: bool = False,
                       cues: Optional[AgencyCues] = None) -> Model:
    """A member fitted by scikit-learn in the member-fitting step
    (``pipeline/fitting.py``): TF-IDF (sublinear tf) 1..``ngram_size``-grams
    (in at least ``min_df`` sentences; too few: an error) of the sentence
    and of its neighbours (``neighbour_weight`` times), the section one-hot
    (``use_sections``) and the position buckets -> ``LogisticRegression(C,
    class_weight, max_iter)`` (``tfidf_member.tfidf_expert``).
    ``learn_from``: a ``spacy_rhetoric.papers.v1`` or
    ``spacy_rhetoric.other_docs.v1`` block. ``normalize_digits``: every
    digit reads 0. ``cues``: an optional ``spacy_rhetoric.AgencyCues.v1``
    block, whose work each sentence speaks of (``agency.py``)."""
    return tfidf_expert(ngram_size, min_df, neighbour_weight, C, class_weight, max_iter=max_iter,
                        docs=_scope(learn_from, "TfidfMember.v1"), use_sections=use_sections,
                        normalize_digits=normalize_digits, cues=cues)


def _scope(learn_from: Any, block: str) -> str:
    if not isinstance(learn_from, DocScope):
        raise RhetoricError(f"{block}: learn_from is a block (@misc = \"spacy_rhetoric.papers.v1\", "
                            f"\"spacy_rhetoric.other_docs.v1\" or \"spacy_rhetoric.all_docs.v1\"), got {learn_from!r}")
    return learn_from.name


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


def _finetuned_signature() -> Signature:
    """``FinetunedMember.v1``'s arguments: ``learn_from``, the fields of
    ``finetuned.FinetunedSettings`` (the one list of the fine-tune's
    settings), ``use_sections``, ``precision`` and ``vectors``."""
    settings = [Parameter(f.name, Parameter.KEYWORD_ONLY, annotation=f.type, default=f.default)
                for f in fields(FinetunedSettings)]
    return Signature([Parameter("learn_from", Parameter.POSITIONAL_OR_KEYWORD, annotation=DocScope), *settings,
                      Parameter("use_sections", Parameter.KEYWORD_ONLY, annotation=bool, default=True),
                      Parameter("precision", Parameter.KEYWORD_ONLY, annotation=str, default="auto"),
                      Parameter("vectors", Parameter.KEYWORD_ONLY, annotation=Optional[VectorHead], default=None)],
                     return_annotation=Model)


def build_finetuned_member(learn_from: DocScope, *, use_sections: bool = True, precision: str = "auto",
                           vectors: Optional[VectorHead] = None, **settings: Any) -> Model:
    """A member fine-tuned in the member-fitting step (``pipeline/fitting.py``)
    on the sentences of its ``learn_from`` docs: the top layers of the
    Hugging Face encoder ``name`` (resolved offline; the bottom
    ``frozen_layers`` frozen) over the sentence paired with its heading and
    neighbours, beside section + position -> linear -> softmax; every
    setting of the fine-tune is an argument (``finetuned.FinetunedSettings``:
    ``epochs``, ``learn_rate``, ``head_learn_rate``, ``weight_decay``,
    ``warmup``, ``grad_clip``, ``batch_size``, ``max_length``,
    ``context_chars``, ``class_weight_power``, ``balance_sources``,
    ``source_power``, ``seed``); ``ml/finetuned.py``. ``use_sections``: the
    heading and the section one-hot are read. ``precision``: the number
    format of prediction ("auto": bfloat16 where the device multiplies it in
    hardware, else float32; "fp32", "bf16", "int8";
    ``finetuned_encoder.resolve_precision``). ``vectors``: a
    ``[...vectors]`` block (``VectorHead.v1``): the same pass also gives
    every sentence's ``rhetoric_vector`` -- one trunk, two heads."""
    return finetuned_expert(docs=_scope(learn_from, "FinetunedMember.v1"), use_sections=use_sections, precision=precision,
                            vectors=vectors, **settings)


build_finetuned_member.__signature__ = _finetuned_signature()  # type: ignore[attr-defined]
build_finetuned_member.__annotations__ = {p.name: p.annotation for p in _finetuned_signature().parameters.values()}
registry.architectures("spacy_rhetoric.FinetunedMember.v1")(build_finetuned_member)


@registry.architectures("spacy_rhetoric.FullPaperSentenceClassifier.v4")
def build_full_paper_sentence_classifier(network: Model[Tuple[List[Doc], Ragged], Floats2d],
                                         members: Dict[str, Any], weights: Dict[str, Dict[str, float]],
                                         forced_sections: Sequence[str] = (BACK_MATTER,),
                                         forced_label: str = OTHER,
                                         nO: Optional[int] = None,
                                         priors: Optional[Dict[str, Dict[str, float]]] = None
                                         ) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """``network`` (``SectionAwareNetwork.v1``) and the fitted ``members``
    (blocks by name, each a builder's fitted member; typed ``Any`` as
    confection checks a dict of blocks) mixed with the per-scope ``weights`` (module
    docstring) and, at prediction, the per-scope label ``priors``
    (:func:`experts`; none by default); sentences in ``forced_sections`` get
    ``forced_label`` by rule, as in ``SectionAwareSentenceClassifier.v3``."""
    mixture = experts(network, members, weights, nO=nO, priors=priors)
    return _section_aware_model(mixture, network.get_ref("tok2vec"), network.get_ref("pooler"), mixture,
                                forced_sections, forced_label, network.attrs["use_sections"],
                                network.attrs["acknowledgements"])
