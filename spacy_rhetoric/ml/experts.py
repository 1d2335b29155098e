"""Two experts for one sentence classifier: a context network and a lexical
model of the sentence, its neighbours, its section and its position, each
trained on its own loss and averaged at prediction.

Why. On full papers (MuLMS-AZ, ``benchmarks/bench_fullpaper.py``) the
section-aware context network (``SectionAwareSentenceClassifier.v3``) and a
scikit-learn TF-IDF logistic regression over the sentence, its neighbours'
words, its section and its position make different errors: averaging their
probabilities was 2-4 points of single-zone accuracy above either alone on
the document-disjoint folds (benchmarks/README.md "Full papers"). Summing
the two into one set of logits and training them together (what v3's sparse
n-gram part does) lets the network's features dominate; a mixture whose
members each learn from their own loss keeps the lexical model a model of
its own, as in an ensemble.

``experts(models, weights)``: every member maps ``(docs, indices)`` to one
row of label probabilities per sentence. At prediction the layer outputs
their weighted mean. In training it outputs the members' rows side by side,
``[n, E * K]``, and ``rhetoric_function_classifier``'s loss
(``FunctionClassifier._loss``) scores each ``K``-column block against the gold
labels on its own and hands back the blocks' gradients; the layer passes each
member its block. So each member minimises its own negative log-likelihood,
and the mixture is only formed at prediction time (the pipe counts the blocks
from the output's width, a multiple of the number of labels).

``FullPaperSentenceClassifier.v2`` keeps the network and replaces the SGD
lexical expert with closed-form members fitted by scikit-learn when the pipe
is initialized (``ml/fitted.py``): a TF-IDF and a frozen-MiniLM logistic
regression on full papers, and a TF-IDF one on abstracts and plain text.
The layer leaves them out of the training output (they have no loss) and
averages in, on each row, the members that speak there.

``lexical_expert`` (v1): hashed features of each sentence -> ``SparseLinear`` ->
softmax. Features (all keys hashed into one table, each group L2-normalised
as TF-IDF rows are): the sentence's 1..``ngram_size``-grams (``LOWER``,
counts); the same of the previous and of the next sentence of the doc, tagged
so that "we" in a neighbour is another feature than "we" in the sentence
(``neighbour_weight`` times); the sentence's section category
(``rhetoric_section_tagger``'s, "unknown" without one); the position buckets
of ``ml.sequence`` within its run of same-section sentences, tagged with the
section; with ``heading_words`` the lower-cased words of the heading above
it (``sent._.rhetoric_heading``), e.g. "performance" in "Electrochemical
Performance". ``SparseLinear`` is numpy-only: the feature extraction and the
table run on the CPU inside ``ml.devices.with_cpu_chain`` and the softmax on
the model's device.
"""
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy
from spacy.attrs import LOWER
from spacy.strings import hash_string
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, SparseLinear_v2, chain, softmax_activation
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from ..section_headings import BACK_MATTER, OTHER, token_values
from .assembly import CONTEXT_TRUNK, FINETUNED_MEMBER, FITTED_MEMBERS, SEQUENCE_HEAD, architecture
from .devices import to_host, with_cpu_chain
from .fitted import embedding_expert, finetuned_expert, is_fitted_member, speaks, tfidf_expert
from .sections import _section_aware_model, section_aware_layers
from .segments import paper_rows, sections_of, segments_of
from .sequence import _position_keys, crf_layer, emitters, ngram_counts

PREV_TAG = numpy.uint64(hash_string("__prev"))
NEXT_TAG = numpy.uint64(hash_string("__next"))
_MIX = numpy.uint64(0x9E3779B97F4A7C15)


def experts(members: Sequence[Model], weights: Sequence[float], nO: Optional[int] = None,
            papers_only: Sequence[bool] = (), silent_sections: Sequence[str] = ()) -> Model:
    """Weighted mean of the members' probabilities at prediction; their rows
    side by side in training (module docstring). ``weights`` are
    normalised to sum to 1. The members' output dims follow this layer's
    ``nO`` (each member has its output layer as ref "output").
    ``papers_only[i]``: member ``i`` learns from the sentences of full papers
    only (``is_paper``; its gradient is 0 on the rows of other docs) and has
    weight 0 on them at prediction (an abstract or plain text is the other
    members' alone). ``silent_sections``: at prediction, a papers-only member
    has weight 0 on the sentences of these sections too (e.g. "abstract":
    a paper's abstract is read like the abstracts the network learned from);
    it still learns from them."""
    if len(members) != len(weights) or not members:
        raise RhetoricError(f"experts: {len(members)} members for {len(weights)} weights")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise RhetoricError(f"experts: weights must be >= 0 with a positive sum, got {list(weights)}")
    total = float(sum(weights))
    return Model("experts", _experts_forward, init=_experts_init, layers=list(members), dims={"nO": nO},
                 attrs={"weights": [float(w) / total for w in weights],
                        "papers_only": [bool(p) for p in papers_only] or [False] * len(members),
                        "silent_sections": list(silent_sections)})


def _experts_init(model: Model, X=None, Y=None) -> None:
    nO = model.get_dim("nO") if model.has_dim("nO") else None
    for member in model.layers:
        if nO is not None:
            target = member.get_ref("output") if member.has_ref("output") else member
            target.set_dim("nO", nO)
        member.initialize(X=X)


def _member_weights(model: Model, member: Model, weight: float, papers_only: bool, X, papers, n_rows: int):
    """A member's weight on each row at prediction, ``[n, 1]``: a fitted
    member (ml/fitted.py) speaks where its own scope says (``fitted.speaks``)
    and not at all before it is fitted; a papers-only member on the rows of
    full papers outside the silent sections; the others everywhere."""
    if is_fitted_member(member):
        if member.attrs.get("state") is None:
            return model.ops.alloc2f(n_rows, 1)
        return model.ops.asarray2f((speaks(member, X) * weight).astype("f")[:, None])
    row = model.ops.asarray2f(numpy.full((n_rows, 1), weight, dtype="f"))
    return row * papers if papers_only else row


def _experts_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool) -> Tuple[Floats2d, Callable]:
    # fitted members (ml/fitted.py) have nothing to learn: in training only the others run
    members = [(m, w, o) for m, w, o in zip(model.layers, model.attrs["weights"],
                                              model.attrs.get("papers_only") or [False] * len(model.layers))
               if not (is_train and is_fitted_member(m))]
    if not is_train:
        # a fitted member weighed 0 (e.g. one set aside by a benchmark) adds nothing to the average and is no
        # fallback (below): not run, as long as a fallback member is left
        kept = [(m, w, o) for m, w, o in members if w > 0 or not is_fitted_member(m)]
        if any(not o and not is_fitted_member(m) for m, _, o in kept):
            members = kept
    outputs = [member(X, is_train) for member, _, _ in members]
    only = [o for _, _, o in members]
    if any(only):
        papers = model.ops.asarray2f(paper_rows(X, () if is_train else model.attrs.get("silent_sections", ()))[:, None])
    else:
        papers = None
    if not is_train:
        n_rows = outputs[0][0].shape[0]
        weights = [_member_weights(model, m, w, o, X, papers, n_rows) for m, w, o in members]
        # a row no member speaks on (e.g. all the weight on a papers-only member, in an abstract): the
        # other members share it equally (all members when every one is papers-only)
        empty = (sum(weights) <= 0).astype("f")
        fallback = [not o and not is_fitted_member(m) for m, _, o in members]
        fallback = fallback if any(fallback) else [True] * len(members)
        weights = [w + empty * (1.0 / sum(fallback)) if f else w for w, f in zip(weights, fallback)]
        total = sum(weights)
        mixed = None
        for w, (probs, _) in zip(weights, outputs):
            mixed = probs * (w / total) if mixed is None else mixed + probs * (w / total)
        return mixed, lambda dY: []
    widths = [probs.shape[1] for probs, _ in outputs]
    stacked = model.ops.xp.hstack([probs for probs, _ in outputs])

    def backprop(dY: Floats2d):
        start = 0
        for width, o, (_, bp) in zip(widths, only, outputs):
            d = dY[:, start : start + width]
            bp(model.ops.xp.ascontiguousarray(d * papers if o else d))
            start += width
        return []

    return stacked, backprop


def _normalised(vals: numpy.ndarray, scale: float = 1.0) -> numpy.ndarray:
    vals = vals.astype("f")
    norm = float(numpy.sqrt((vals * vals).sum()))
    return vals * (scale / norm) if norm > 0 else vals


def _tagged(keys: numpy.ndarray, tag: numpy.uint64) -> numpy.ndarray:
    with numpy.errstate(over="ignore"):
        return (keys * _MIX) ^ tag


def lexical_features(ngram_size: int = 2, neighbour_weight: float = 0.5, heading_words: bool = False,
                     segments: str = "sections", section_dropout: float = 0.0) -> Model:
    """``(docs, indices)`` -> ``(keys, values, lengths)`` for ``SparseLinear``
    (module docstring). ``section_dropout``: in training, the share of
    same-section runs whose section key and section-tagged position keys are
    left out (their positions then count untagged), so the words must carry
    the decision."""
    return Model("lexical_features", _lexical_forward,
                 attrs={"ngram_size": ngram_size, "neighbour_weight": float(neighbour_weight),
                        "heading_words": heading_words, "segments": segments,
                        "section_dropout": float(section_dropout)})


def _lexical_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool):
    docs, indices = X
    ops = model.ops
    size = model.attrs["ngram_size"]
    offsets = to_host(indices.dataXd)
    lengths = to_host(indices.lengths).tolist()
    sections = sections_of(X)
    seg_lengths, seg_tags = segments_of(X, model.attrs["segments"])
    dropout = model.attrs.get("section_dropout", 0.0) if is_train else 0.0
    dropped = (numpy.random.random(len(seg_lengths)) < dropout) if dropout > 0 else [False] * len(seg_lengths)
    positions = [keys for n, tag, drop in zip(seg_lengths, seg_tags, dropped)
                 for keys in _position_keys(n, "" if drop else tag)]
    hidden = [bool(drop) for n, drop in zip(seg_lengths, dropped) for _ in range(n)]
    weight = model.attrs["neighbour_weight"]
    out_keys, out_vals, out_lengths = [], [], []
    row = 0
    for doc, n in zip(docs, lengths):
        ids = doc.to_array([LOWER]).astype("uint64").reshape(-1)
        grams = [ngram_counts(ops, ids[int(offsets[row + i, 0]) : int(offsets[row + i, 1])], size)
                 for i in range(n)]
        headings = token_values(doc, "heading") if model.attrs["heading_words"] else None
        for i in range(n):
            parts_k, parts_v = [grams[i][0]], [_normalised(grams[i][1])]
            if weight > 0 and i > 0:
                parts_k.append(_tagged(grams[i - 1][0], PREV_TAG))
                parts_v.append(_normalised(grams[i - 1][1], weight))
            if weight > 0 and i + 1 < n:
                parts_k.append(_tagged(grams[i + 1][0], NEXT_TAG))
                parts_v.append(_normalised(grams[i + 1][1], weight))
            extra = ([] if hidden[row + i] else [hash_string(f"__section={sections[row + i]}")]) + list(positions[row + i])
            if headings is not None:
                heading = headings[int(offsets[row + i, 0])] if len(headings) else None
                extra.extend(hash_string(f"__heading={w}") for w in sorted(set(str(heading or "").lower().split())))
            parts_k.append(numpy.asarray(extra, dtype="uint64"))
            parts_v.append(numpy.ones((len(extra),), dtype="f"))
            keys = numpy.concatenate(parts_k)
            out_keys.append(keys)
            out_vals.append(numpy.concatenate(parts_v))
            out_lengths.append(len(keys))
        row += n
    if out_keys:
        keys = numpy.ascontiguousarray(numpy.concatenate(out_keys), dtype="uint64")
        vals = numpy.ascontiguousarray(numpy.concatenate(out_vals), dtype="f")
    else:
        keys, vals = numpy.zeros((0,), dtype="uint64"), numpy.zeros((0,), dtype="f")
    return (keys, vals, numpy.asarray(out_lengths, dtype="int32")), lambda dY: []


def lexical_expert(ngram_size: int = 2, ngram_length: int = 2 ** 18, neighbour_weight: float = 0.5,
                   heading_words: bool = False, segments: str = "sections", section_dropout: float = 0.0,
                   nO: Optional[int] = None) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """Lexical features -> ``SparseLinear`` (on the CPU) -> softmax; the
    table is ref "output"."""
    table = SparseLinear_v2(nO=nO, length=ngram_length)
    model = chain(with_cpu_chain(lexical_features(ngram_size, neighbour_weight, heading_words, segments,
                                                  section_dropout), table),
                  softmax_activation())
    model.set_ref("output", table)
    return model


def _network(tok2vec, pooling, width, encoder, depth, window_size, maxout_pieces, dropout, hidden_size,
             use_sections, section_scale, acknowledgements, ngram_size, ngram_length, decode, head_scale):
    """The pooler and the v3 section-aware network with its CRF: the first
    member of both full-paper classifiers."""
    pooler, layers = section_aware_layers(
        tok2vec, pooling=pooling, width=width, encoder=encoder, depth=depth, window_size=window_size,
        maxout_pieces=maxout_pieces, dropout=dropout, hidden_size=hidden_size, use_sections=use_sections,
        section_scale=section_scale, acknowledgements=acknowledgements, positions="sections")
    return pooler, crf_layer(emitters(layers, ngram_size, ngram_length, "sections"), decode=decode,
                             head_scale=head_scale)


@registry.architectures("spacy_rhetoric.FullPaperSentenceClassifier.v1")
def build_full_paper_sentence_classifier(
    tok2vec: Model[List[Doc], List[Floats2d]],
    pooling: str = "mean+max",
    width: int = 128,
    encoder: str = "cnn",
    depth: int = 2,
    window_size: int = 1,
    maxout_pieces: int = 3,
    dropout: float = 0.1,
    hidden_size: int = 0,
    use_sections: bool = True,
    forced_sections: Sequence[str] = (BACK_MATTER,),
    forced_label: str = OTHER,
    section_scale: float = 5.0,
    acknowledgements: bool = True,
    ngram_size: int = 2,
    ngram_length: int = 2 ** 18,
    decode: str = "marginal",
    head_scale: float = 1.0,
    lexical_weight: float = 0.5,
    lexical_ngram_size: int = 2,
    lexical_length: int = 2 ** 19,
    neighbour_weight: float = 0.5,
    heading_words: bool = False,
    lexical_docs: str = "papers",
    lexical_silent_sections: Sequence[str] = ("abstract",),
    lexical_section_dropout: float = 0.0,
    nO: Optional[int] = None,
) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """``SectionAwareSentenceClassifier.v3`` (sections as segments and
    positions) and ``lexical_expert`` as the two members of ``experts``,
    weighted ``1 - lexical_weight`` and ``lexical_weight``; the back-matter
    rule on the mixture. Arguments up to ``head_scale``: as v3 (the
    network's sparse n-gram part stays: ``ngram_size``); ``lexical_*``,
    ``neighbour_weight``, ``heading_words``: the lexical expert's (module
    docstring). ``lexical_weight = 0`` still trains the lexical expert but
    predicts with the network alone. ``lexical_docs``: "all", or "papers":
    the lexical expert learns from and speaks on full papers only
    (``experts``' ``papers_only``), abstracts and plain text are the
    network's; ``lexical_silent_sections``: sections of a paper where it
    does not speak at prediction (default: the abstract, read like the
    abstracts the network learned from; it still learns from them);
    ``lexical_section_dropout``: ``lexical_features``' ``section_dropout``."""
    if lexical_docs not in ("all", "papers"):
        raise RhetoricError(f"Unknown lexical_docs {lexical_docs!r}: use 'all' or 'papers'")
    pooler, network = _network(tok2vec, pooling, width, encoder, depth, window_size, maxout_pieces, dropout,
                               hidden_size, use_sections, section_scale, acknowledgements, ngram_size,
                               ngram_length, decode, head_scale)
    lexical = lexical_expert(lexical_ngram_size, lexical_length, neighbour_weight, heading_words, "sections",
                             lexical_section_dropout)
    mixture = experts([network, lexical], [1.0 - lexical_weight, lexical_weight], nO=nO,
                      papers_only=[False, lexical_docs == "papers"], silent_sections=lexical_silent_sections)
    return _section_aware_model(mixture, tok2vec, pooler, mixture, forced_sections, forced_label, use_sections,
                                acknowledgements)


@registry.architectures("spacy_rhetoric.FullPaperSentenceClassifier.v2")
@architecture(*CONTEXT_TRUNK, "hidden_size", "use_sections", "forced_sections", "forced_label", "section_scale",
              "acknowledgements", *SEQUENCE_HEAD, *FITTED_MEMBERS, "nO", pooling="mean+max", section_scale=5.0,
              acknowledgements=True)
def build_full_paper_sentence_classifier_v2(**args: Any) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """The v3 section-aware network (arguments up to ``head_scale``, as v1)
    and two closed-form members fitted by scikit-learn when the pipe is
    initialized (``ml/fitted.py``): ``tfidf_expert`` (``tfidf_*``,
    ``neighbour_weight``) and, unless ``embedding_model`` is null or
    ``embedding_weight`` 0, ``embedding_expert`` over the frozen vectors of
    that sentence-transformers model (``embedding_*``); both with
    ``class_weight`` ("balanced" or null), learning from full papers only and
    silent in ``fitted_silent_sections`` of a paper and in abstracts and
    plain text. With ``abstract_weight > 0`` (default 0, as in the models
    trained before it existed), a third closed-form member,
    a TF-IDF logistic regression (``abstract_C``) without the section
    feature, learns from and speaks on the docs that are not full papers
    (abstracts, plain text). At prediction the probabilities of the members
    that speak on a sentence are averaged with ``network_weight``,
    ``tfidf_weight``, ``embedding_weight`` and ``abstract_weight`` (on an
    abstract: the network and the abstract member); the back-matter rule on
    the mixture. ``normalize_digits``: the TF-IDF members read every digit
    as 0 (``fitted.tfidf_expert``; default off, as in the models trained
    before it existed). ``embedding_learn_from``: "papers", or "all": the
    MiniLM member also learns from the abstracts (``fitted.embedding_expert``),
    still speaking on papers only. (The arguments are declared once, in
    ``assembly.py``; ``_full_paper_v2`` names them.)"""
    return _full_paper_v2(**args)


def _full_paper_v2(tok2vec, pooling, width, encoder, depth, window_size, maxout_pieces, dropout, hidden_size,
                   use_sections, forced_sections, forced_label, section_scale, acknowledgements, ngram_size,
                   ngram_length, decode, head_scale, network_weight, tfidf_weight, embedding_weight, tfidf_ngram_size,
                   tfidf_min_df, tfidf_C, neighbour_weight, embedding_model, embedding_C, embedding_max_length,
                   class_weight, fitted_silent_sections, abstract_weight, abstract_C, normalize_digits,
                   embedding_learn_from, nO, finetuned: Optional[Model] = None, finetuned_weight: float = 0.0,
                   abstract_paper_sections: Sequence[str] = ()):
    """The mixture of v2 (and of v3, with its ``finetuned`` member last)."""
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
    """v2 and a fourth member on full papers, ``fitted.finetuned_expert``
    (``ml/finetuned.py``): the top layers of ``finetuned_model`` (the bottom
    ``finetuned_frozen_layers`` frozen) fine-tuned at initialize on the
    papers' sentences paired with their heading and neighbours, for
    ``finetuned_epochs`` passes (``finetuned_learn_rate``,
    ``finetuned_batch_size``, pairs of ``finetuned_max_length`` word pieces),
    weighted ``finetuned_weight`` in the average (0, or a null model: v2).
    Silent in abstracts and plain text, like v2's paper members.
    ``abstract_paper_sections``: the sections of a paper where the
    abstracts' member (``abstract_weight``, learned from the docs that are
    not papers, e.g. CSAbstruct) is averaged in too, e.g. ["abstract"]: a
    paper's abstract is read by the members of both kinds of doc."""
    # the arguments (declared in assembly.py): v2's, then the fine-tuned member's (FINETUNED_MEMBER)
    tuned = {name: args.pop(name) for name in FINETUNED_MEMBER}
    finetuned = None
    if tuned["finetuned_model"] and tuned["finetuned_weight"] > 0:
        finetuned = finetuned_expert(tuned["finetuned_model"], epochs=tuned["finetuned_epochs"],
                                     learn_rate=tuned["finetuned_learn_rate"],
                                     batch_size=tuned["finetuned_batch_size"],
                                     max_length=tuned["finetuned_max_length"],
                                     frozen_layers=tuned["finetuned_frozen_layers"],
                                     silent_sections=list(args["fitted_silent_sections"]))
    return _full_paper_v2(**args, finetuned=finetuned, finetuned_weight=tuned["finetuned_weight"],
                          abstract_paper_sections=tuned["abstract_paper_sections"])
