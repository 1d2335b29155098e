"""The full-paper sentence classifier: a mixture of a section-aware context
network and members fitted when the pipe is initialized.

``experts(members, weights)``: every member maps ``(docs, indices)`` to one
row of label probabilities per sentence. Exactly one member, the network
(``SectionAwareSentenceClassifier.v3``'s layers with its CRF), learns by
gradient: in training the layer is that member. The others are fitted at
initialize (``ml/fitted.py``: TF-IDF logistic regressions by scikit-learn;
``ml/finetuned.py``: the top layers of a sentence-transformers model
fine-tuned on the papers' sentences) and have no loss. At prediction the layer
averages, on each row, the members that speak there (``fitted.speaks``: a
paper member on full papers, the abstracts' member on docs that are not
papers and on the paper sections it is given), each with its weight; a row
where no fitted member speaks is the network's.

Why a mixture: on full papers the network and a lexical model of the sentence,
its neighbours, its section and its position make different errors, and
members that each learn from their own objective keep their own view, as in
an ensemble (the figures: RESULTS.md, full papers).
"""
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from .assembly import CONTEXT_TRUNK, FINETUNED_MEMBER, FITTED_MEMBERS, SEQUENCE_HEAD, architecture
from .fitted import embedding_expert, finetuned_expert, is_fitted_member, speaks, tfidf_expert
from .sections import _section_aware_model, section_aware_layers
from .sequence import crf_layer, emitters


def experts(members: Sequence[Model], weights: Sequence[float], nO: Optional[int] = None) -> Model:
    """Weighted mean of the members' probabilities at prediction (module
    docstring); in training the output of the one member that learns by
    gradient (the others are fitted at initialize and have no loss).
    ``weights`` are normalised to sum to 1. The members' output dims follow
    this layer's ``nO`` (each member has its output layer as ref "output")."""
    if len(members) != len(weights) or not members:
        raise RhetoricError(f"experts: {len(members)} members for {len(weights)} weights")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise RhetoricError(f"experts: weights must be >= 0 with a positive sum, got {list(weights)}")
    trained = [m.name for m in members if not is_fitted_member(m)]
    if len(trained) != 1:
        raise RhetoricError(f"experts: exactly one member learns by gradient, got {trained or 'none'}")
    total = float(sum(weights))
    return Model("experts", _experts_forward, init=_experts_init, layers=list(members), dims={"nO": nO},
                 attrs={"weights": [float(w) / total for w in weights]})


def _experts_init(model: Model, X=None, Y=None) -> None:
    nO = model.get_dim("nO") if model.has_dim("nO") else None
    for member in model.layers:
        if nO is not None:
            target = member.get_ref("output") if member.has_ref("output") else member
            target.set_dim("nO", nO)
        member.initialize(X=X)


def _member_weights(model: Model, member: Model, weight: float, X, n_rows: int):
    """A member's weight on each row at prediction, ``[n, 1]``: a fitted
    member (ml/fitted.py) speaks where its own scope says (``fitted.speaks``)
    and not at all before it is fitted; the trained member everywhere."""
    if is_fitted_member(member):
        if member.attrs.get("state") is None:
            return model.ops.alloc2f(n_rows, 1)
        return model.ops.asarray2f((speaks(member, X) * weight).astype("f")[:, None])
    return model.ops.asarray2f(numpy.full((n_rows, 1), weight, dtype="f"))


def _experts_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool) -> Tuple[Floats2d, Callable]:
    if is_train:  # fitted members (ml/fitted.py) have nothing to learn: only the trained one runs
        network = next(m for m in model.layers if not is_fitted_member(m))
        return network(X, is_train)
    # a fitted member weighed 0 (e.g. one set aside by a benchmark) adds nothing to the average: not run
    members = [(m, w) for m, w in zip(model.layers, model.attrs["weights"]) if w > 0 or not is_fitted_member(m)]
    outputs = [member.predict(X) for member, _ in members]
    n_rows = outputs[0].shape[0]
    weights = [_member_weights(model, m, w, X, n_rows) for m, w in members]
    # a row no member speaks on (all the weight on fitted members silent there): the trained member's
    empty = (sum(weights) <= 0).astype("f")
    weights = [w if is_fitted_member(m) else w + empty for w, (m, _) in zip(weights, members)]
    total = sum(weights)
    mixed = None
    for w, probs in zip(weights, outputs):
        mixed = probs * (w / total) if mixed is None else mixed + probs * (w / total)
    return mixed, lambda dY: []


def _network(tok2vec, pooling, width, encoder, depth, window_size, maxout_pieces, dropout, hidden_size,
             use_sections, section_scale, acknowledgements, ngram_size, ngram_length, decode, head_scale):
    """The pooler and the section-aware network (as
    ``SectionAwareSentenceClassifier.v3``) with its CRF: the mixture's one
    member trained by gradient."""
    pooler, layers = section_aware_layers(
        tok2vec, pooling=pooling, width=width, encoder=encoder, depth=depth, window_size=window_size,
        maxout_pieces=maxout_pieces, dropout=dropout, hidden_size=hidden_size, use_sections=use_sections,
        section_scale=section_scale, acknowledgements=acknowledgements, positions="sections")
    return pooler, crf_layer(emitters(layers, ngram_size, ngram_length, "sections"), decode=decode,
                             head_scale=head_scale)


def _full_paper_mixture(tok2vec, pooling, width, encoder, depth, window_size, maxout_pieces, dropout, hidden_size,
                        use_sections, forced_sections, forced_label, section_scale, acknowledgements, ngram_size,
                        ngram_length, decode, head_scale, network_weight, tfidf_weight, embedding_weight, tfidf_ngram_size,
                        tfidf_min_df, tfidf_C, neighbour_weight, embedding_model, embedding_C, embedding_max_length,
                        class_weight, fitted_silent_sections, abstract_weight, abstract_C, normalize_digits,
                        embedding_learn_from, nO, finetuned: Optional[Model] = None, finetuned_weight: float = 0.0,
                        abstract_paper_sections: Sequence[str] = ()):
    """The network, the fitted members whose weight is > 0 (``finetuned`` last)
    and the back-matter rule on their mixture."""
    pooler, network = _network(tok2vec, pooling, width, encoder, depth, window_size, maxout_pieces, dropout,
                               hidden_size, use_sections, section_scale, acknowledgements, ngram_size,
                               ngram_length, decode, head_scale)
    members, weights = [network], [network_weight]
    silent = list(fitted_silent_sections)
    if tfidf_weight > 0:
        members.append(tfidf_expert(tfidf_ngram_size, tfidf_min_df, neighbour_weight, tfidf_C, class_weight,
                                    silent_sections=silent, normalize_digits=normalize_digits))
        weights.append(tfidf_weight)
    if embedding_model and embedding_weight > 0:
        members.append(embedding_expert(embedding_model, neighbour_weight, embedding_C, class_weight,
                                        max_length=embedding_max_length, silent_sections=silent,
                                        learn_from=embedding_learn_from))
        weights.append(embedding_weight)
    if abstract_weight > 0:
        members.append(tfidf_expert(tfidf_ngram_size, tfidf_min_df, neighbour_weight, abstract_C, class_weight,
                                    docs="others", use_sections=False, normalize_digits=normalize_digits,
                                    paper_sections=list(abstract_paper_sections)))
        weights.append(abstract_weight)
    if finetuned is not None and finetuned_weight > 0:
        members.append(finetuned)
        weights.append(finetuned_weight)
    # each fitted member speaks where its own scope says (fitted.speaks)
    mixture = experts(members, weights, nO=nO)
    return _section_aware_model(mixture, tok2vec, pooler, mixture, forced_sections, forced_label, use_sections,
                                acknowledgements)


@registry.architectures("spacy_rhetoric.FullPaperSentenceClassifier.v3")
@architecture(*CONTEXT_TRUNK, "hidden_size", "use_sections", "forced_sections", "forced_label", "section_scale",
              "acknowledgements", *SEQUENCE_HEAD, *FITTED_MEMBERS, *FINETUNED_MEMBER, "nO", pooling="mean+max",
              section_scale=5.0, acknowledgements=True)
def build_full_paper_sentence_classifier_v3(**args: Any) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """The section-aware network (arguments up to ``head_scale``, as
    ``SectionAwareSentenceClassifier.v3`` with sections as segments and
    positions) and members fitted when the pipe is initialized:
    ``tfidf_expert`` (``tfidf_*``, ``neighbour_weight``, ``normalize_digits``)
    and, unless ``embedding_model`` is null or ``embedding_weight`` 0,
    ``embedding_expert`` over that model's frozen vectors (``embedding_*``),
    both learning from full papers only with ``class_weight`` and silent in
    ``fitted_silent_sections``; with ``abstract_weight > 0`` a TF-IDF
    member without the section feature (``abstract_C``) that learns from and
    speaks on the docs that are not full papers; and ``fitted.finetuned_expert``
    (``ml/finetuned.py``): the top layers of ``finetuned_model`` (the bottom
    ``finetuned_frozen_layers`` frozen) fine-tuned at initialize on the
    papers' sentences paired with their heading and neighbours, for
    ``finetuned_epochs`` passes (``finetuned_learn_rate``,
    ``finetuned_batch_size``, pairs of ``finetuned_max_length`` word pieces),
    weighted ``finetuned_weight`` in the average (0, or a null model: left
    out). Silent in abstracts and plain text, like the other paper members.
    ``abstract_paper_sections``: the sections of a paper where the
    abstracts' member (``abstract_weight``, learned from the docs that are
    not papers, e.g. CSAbstruct) is averaged in too, e.g. ["abstract"]: a
    paper's abstract is read by the members of both kinds of doc."""
    # the arguments (declared in assembly.py): the mixture's, then the fine-tuned member's (FINETUNED_MEMBER)
    tuned = {name: args.pop(name) for name in FINETUNED_MEMBER}
    finetuned = None
    if tuned["finetuned_model"] and tuned["finetuned_weight"] > 0:
        finetuned = finetuned_expert(tuned["finetuned_model"], epochs=tuned["finetuned_epochs"],
                                     learn_rate=tuned["finetuned_learn_rate"],
                                     batch_size=tuned["finetuned_batch_size"],
                                     max_length=tuned["finetuned_max_length"],
                                     frozen_layers=tuned["finetuned_frozen_layers"],
                                     silent_sections=list(args["fitted_silent_sections"]))
    return _full_paper_mixture(**args, finetuned=finetuned, finetuned_weight=tuned["finetuned_weight"],
                               abstract_paper_sections=tuned["abstract_paper_sections"])
