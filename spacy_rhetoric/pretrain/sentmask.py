"""SENT-MASK: self-supervised contextual sentence representations.

Contrastive contextualized sentence representations (§2.1-2.2), on unlabelled
full papers. For a window of consecutive sentences and one target sentence:

* positive ``s_pos``: the target's vector in the original window;
* anchor ``s_anc``: the vector at the target's position when the target is
  replaced by the ``[SENT-MASK]`` token (added to the tokenizer);
* negatives ``s_neg``: the vectors at the target's position when the target is
  replaced by other sentences of the same paper (outside the window where the
  paper has enough of them);

``losses.info_nce_loss`` over dot products (temperature configurable; 1 in the
paper), plus an optional masked-language-model term (``mlm_weight``, 15 %
of the original window's word pieces, BERT's 80/10/10). A sentence's vector is
the mean of the encoder's last hidden states over its own word pieces inside
the window, as the context heads pool a transformer's output today.

Windowing (``windows.plan_target_windows``): the targets of a paper are cut
into cores that every sentence belongs to exactly once per epoch, each read
inside an overlapping window of ``window_sents`` sentences cut to
``max_sentence_tokens`` word pieces each, so memory is bounded by the window
and ``windows_per_step`` whatever the paper's length. The original window is
shared by all targets of its core (one forward pass for their positives).

The result is a Hugging Face model directory (``save_pretrained``:
safetensors weights, config, tokenizer) that initialises the shared
transformer of ``configs/rhetoric_trf.cfg``::

    python -m spacy train configs/rhetoric_trf.cfg \\
        --components.transformer.model.name.name training/sentmask/model ...
"""
import json
import logging
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch

from ..errors import RhetoricError
from ..losses import info_nce_loss
from ..ml.section_chunks import pad_batch, to_model_device
from ..util import torch_device
from .windows import (
    TargetWindow,
    TrainSettings,
    adamw_with_warmup,
    pack_window,
    plan_target_windows,
    run_pretraining,
)

logger = logging.getLogger(__name__)

SENT_MASK_TOKEN = "[SENT-MASK]"


@dataclass
class SentMaskSettings(TrainSettings):
    window_sents: int = 8
    targets_per_window: int = 4
    max_sentence_tokens: int = 48
    n_negatives: int = 4
    temperature: float = 1.0
    mlm_weight: float = 0.0
    mlm_probability: float = 0.15
    mask_token: str = SENT_MASK_TOKEN
    windows_per_step: int = 2
    min_sentences: int = 3  # papers with fewer sentences are skipped

    def check(self) -> None:
        if self.n_negatives < 1:
            raise RhetoricError("SENT-MASK needs n_negatives >= 1")
        if self.temperature <= 0:
            raise RhetoricError("SENT-MASK: temperature must be > 0")
        if self.max_sentence_tokens < 1 or self.windows_per_step < 1:
            raise RhetoricError("SENT-MASK: max_sentence_tokens and windows_per_step must be >= 1")
        if self.window_sents < 2:
            raise RhetoricError("SENT-MASK: window_sents must be >= 2 (a target needs context)")


@dataclass
class Paper:
    """One unlabelled paper: its sentences (and their sections, when known)."""

    paper_id: str
    sentences: List[str]
    sections: List[Optional[str]] = field(default_factory=list)
    title: Optional[str] = None


# --------------------------------------------------------------------------
# Inputs


def clscisumm_papers(root: Union[str, Path], *, limit: int = 0, citing: bool = False) -> Iterator[Paper]:
    """Reference papers of the CL-SciSumm topics under ``root`` (with
    ``citing=True`` also the citing papers' XML in ``Citance_XML``), title
    sentence left out of ``sentences`` (kept in ``title``)."""
    from ..readers.clscisumm import iter_topics, read_reference_xml
    from ..readers.common import ReaderError

    n = 0
    for topic in iter_topics(root):
        paths = [topic.reference_xml]
        if citing and topic.citance_dir is not None:
            paths += sorted(topic.citance_dir.glob("*.xml"))
        for path in paths:
            try:
                paper = read_reference_xml(path)
            except ReaderError as err:
                logger.warning("skipped %s: %s", path, err)
                continue
            sents = [s for s in paper.sentences if s.section != "title"]
            if not sents:
                continue
            yield Paper(paper.paper_id, [s.text for s in sents], [s.section for s in sents], paper.title)
            n += 1
            if limit and n >= limit:
                return


def docbin_papers(path: Union[str, Path], *, limit: int = 0) -> Iterator[Paper]:
    """Papers from a ``.spacy`` corpus (one Doc per paper, sentence boundaries set)."""
    import spacy
    from spacy.tokens import DocBin

    from ..extensions import DOC_ID, SECTION, docbin_docs, get_doc_value, get_span_value, install_extensions

    install_extensions()
    nlp = spacy.blank("en")
    for i, doc in enumerate(docbin_docs(DocBin().from_disk(path), nlp.vocab)):
        if limit and i >= limit:
            return
        sents = [s for s in doc.sents if s.text.strip()]
        yield Paper(str(get_doc_value(doc, DOC_ID) or i), [s.text.strip() for s in sents],
                    [get_span_value(s, SECTION) for s in sents])


def read_papers(path: Union[str, Path], *, limit: int = 0) -> List[Paper]:
    path = Path(path)
    if path.suffix == ".spacy":
        return list(docbin_papers(path, limit=limit))
    return list(clscisumm_papers(path, limit=limit))


# --------------------------------------------------------------------------
# Model


def load_encoder(settings: SentMaskSettings):
    """(tokenizer, model) with the SENT-MASK token added; ``model`` is a masked
    LM when ``mlm_weight > 0`` (its encoder is ``model.base_model``)."""
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    from ..ml.hf_safe import no_remote_code
    from ..util import resolve_hf_model

    path = resolve_hf_model(settings.model)
    with no_remote_code(settings.model):
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    if settings.mask_token not in tokenizer.get_vocab():
        tokenizer.add_special_tokens({"additional_special_tokens": [settings.mask_token]})
    cls = AutoModelForMaskedLM if settings.mlm_weight > 0 else AutoModel
    with no_remote_code(settings.model):
        model = cls.from_pretrained(path, trust_remote_code=False)
    if model.get_input_embeddings().num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))
    return tokenizer, model


def base_encoder(model):
    return model.base_model if hasattr(model, "base_model") and model.base_model is not model else model


def span_means(hidden: torch.Tensor, rows: Sequence[int], spans: Sequence[Tuple[int, int]]) -> torch.Tensor:
    """Mean of ``hidden[row, start:end]`` for each (row, span): [len(rows), D]."""
    return torch.stack([hidden[r, s:e].mean(0) for r, (s, e) in zip(rows, spans)])


# --------------------------------------------------------------------------
# Examples


@dataclass
class WindowExample:
    """The inputs of one window: sequence 0 is the original window; for the
    k-th target, ``anchor_rows[k]`` is its masked copy and ``negative_rows[k]``
    its ``n_negatives`` replaced copies; ``spans`` gives the span to pool in
    every sequence (the target's position)."""

    sequences: List[List[int]]
    positive_spans: List[Tuple[int, int]]  # in sequence 0, one per target
    anchor_rows: List[int]
    anchor_spans: List[Tuple[int, int]]
    negative_rows: List[List[int]]
    negative_spans: List[List[Tuple[int, int]]]


def negative_ids(n_sents: int, window: TargetWindow, target: int, k: int, rng: random.Random) -> List[int]:
    """``k`` other sentences of the paper: outside the window when there are
    enough, else any sentence but the target (with repetition if the paper is
    tiny)."""
    outside = [i for i in range(n_sents) if i < window.start or i >= window.end]
    pool = outside if len(outside) >= k else [i for i in range(n_sents) if i != target]
    if len(pool) >= k:
        return rng.sample(pool, k)
    return [rng.choice(pool) for _ in range(k)]


def build_window_example(
    token_ids: Sequence[Sequence[int]],
    window: TargetWindow,
    settings: SentMaskSettings,
    *,
    cls_id: int,
    sep_id: int,
    mask_id: int,
    rng: random.Random,
) -> WindowExample:
    """All inputs of one window (see ``WindowExample``)."""
    m = settings.max_sentence_tokens
    sents = [list(token_ids[i]) for i in range(window.start, window.end)]
    original = pack_window(sents, cls_id, sep_id, m)
    sequences = [original.input_ids]
    positive_spans, anchor_rows, anchor_spans, negative_rows, negative_spans = [], [], [], [], []
    for target in window.target_ids():
        pos = target - window.start
        positive_spans.append(original.spans[pos])
        masked = pack_window(sents[:pos] + [[mask_id]] + sents[pos + 1:], cls_id, sep_id, m)
        anchor_rows.append(len(sequences))
        anchor_spans.append(masked.spans[pos])
        sequences.append(masked.input_ids)
        rows, spans = [], []
        for neg in negative_ids(len(token_ids), window, target, settings.n_negatives, rng):
            replaced = pack_window(sents[:pos] + [list(token_ids[neg])] + sents[pos + 1:], cls_id, sep_id, m)
            rows.append(len(sequences))
            spans.append(replaced.spans[pos])
            sequences.append(replaced.input_ids)
        negative_rows.append(rows)
        negative_spans.append(spans)
    return WindowExample(sequences, positive_spans, anchor_rows, anchor_spans, negative_rows, negative_spans)


def sentmask_loss(model, examples: Sequence[WindowExample], settings: SentMaskSettings, pad_id: int) -> torch.Tensor:
    """InfoNCE over all targets of ``examples`` (one padded forward pass)."""
    encoder = base_encoder(model)
    sequences, offsets = [], []
    for ex in examples:
        offsets.append(len(sequences))
        sequences.extend(ex.sequences)
    ids, mask = to_model_device(model, *pad_batch(sequences, pad_id))
    hidden = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    anchors, positives, negatives = [], [], []
    for off, ex in zip(offsets, examples):
        positives.append(span_means(hidden, [off] * len(ex.positive_spans), ex.positive_spans))
        anchors.append(span_means(hidden, [off + r for r in ex.anchor_rows], ex.anchor_spans))
        negatives.append(torch.stack([
            span_means(hidden, [off + r for r in rows], spans)
            for rows, spans in zip(ex.negative_rows, ex.negative_spans)
        ]))
    return info_nce_loss(torch.cat(anchors), torch.cat(positives), torch.cat(negatives), settings.temperature)


def mlm_loss(model, tokenizer, examples: Sequence[WindowExample], settings: SentMaskSettings,
             generator: torch.Generator) -> torch.Tensor:
    """BERT's masked-LM loss on the original windows."""
    ids, mask = pad_batch([ex.sequences[0] for ex in examples], tokenizer.pad_token_id)
    labels = ids.clone()
    special = torch.tensor(
        [[int(t) in tokenizer.all_special_ids for t in row] for row in ids.tolist()], dtype=torch.bool
    )
    prob = torch.full(ids.shape, settings.mlm_probability)
    chosen = torch.bernoulli(prob, generator=generator).bool() & ~special & mask.bool()
    labels[~chosen] = -100
    inputs = ids.clone()
    replace = torch.bernoulli(torch.full(ids.shape, 0.8), generator=generator).bool() & chosen
    inputs[replace] = tokenizer.mask_token_id
    rand = torch.bernoulli(torch.full(ids.shape, 0.5), generator=generator).bool() & chosen & ~replace
    inputs[rand] = torch.randint(len(tokenizer), ids.shape, generator=generator)[rand]
    if not chosen.any():
        return torch.zeros((), requires_grad=True)
    inputs, mask, labels = to_model_device(model, inputs, mask, labels)
    return model(input_ids=inputs, attention_mask=mask, labels=labels).loss


# --------------------------------------------------------------------------
# Training


def epoch_windows(papers: Sequence[Paper], settings: SentMaskSettings, rng: random.Random
                  ) -> List[Tuple[int, TargetWindow]]:
    """(paper index, window) for one epoch, shuffled: every sentence of every
    usable paper is a target exactly once."""
    items = [
        (i, w)
        for i, paper in enumerate(papers)
        if len(paper.sentences) >= settings.min_sentences
        for w in plan_target_windows(len(paper.sentences), settings.window_sents, settings.targets_per_window)
    ]
    rng.shuffle(items)
    return items


def tokenize_papers(tokenizer, papers: Sequence[Paper], max_sentence_tokens: int) -> List[List[List[int]]]:
    out = []
    for paper in papers:
        enc = tokenizer(paper.sentences, add_special_tokens=False, truncation=True,
                        max_length=max_sentence_tokens)["input_ids"]
        out.append([ids if ids else [tokenizer.unk_token_id] for ids in enc])
    return out


def train_sentmask(
    papers: Sequence[Paper],
    output: Union[str, Path],
    settings: Optional[SentMaskSettings] = None,
    *,
    progress: bool = True,
) -> Dict[str, Any]:
    """Pre-train with SENT-MASK and write ``output/model`` (save_pretrained:
    encoder + tokenizer) and ``output/sentmask.json`` (settings, losses)."""
    settings = settings or SentMaskSettings()
    settings.check()
    rng = random.Random(settings.seed)
    torch.manual_seed(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    tokenizer, model = load_encoder(settings)
    model.to(torch_device(settings.gpu_id))
    mask_id = tokenizer.convert_tokens_to_ids(settings.mask_token)
    token_ids = tokenize_papers(tokenizer, papers, settings.max_sentence_tokens)
    n_windows = sum(
        len(plan_target_windows(len(p.sentences), settings.window_sents, settings.targets_per_window))
        for p in papers if len(p.sentences) >= settings.min_sentences
    )
    steps_per_epoch = math.ceil(n_windows / settings.windows_per_step)
    total = steps_per_epoch * settings.epochs
    if settings.max_steps:
        total = min(total, settings.max_steps)
    optimizer, scheduler = adamw_with_warmup(model, settings.learn_rate, settings.weight_decay,
                                             settings.warmup_steps, total)

    def epoch_batches(epoch: int) -> Iterator[List[WindowExample]]:
        items = epoch_windows(papers, settings, rng)
        for b in range(0, len(items), settings.windows_per_step):
            yield [build_window_example(token_ids[i], w, settings, cls_id=tokenizer.cls_token_id,
                                        sep_id=tokenizer.sep_token_id, mask_id=mask_id, rng=rng)
                   for i, w in items[b: b + settings.windows_per_step]]

    def batch_loss(examples: List[WindowExample]) -> torch.Tensor:
        loss = sentmask_loss(model, examples, settings, tokenizer.pad_token_id)
        if settings.mlm_weight > 0:
            loss = loss + settings.mlm_weight * mlm_loss(model, tokenizer, examples, settings, generator)
        return loss

    model.train()
    result = run_pretraining(
        model, optimizer, scheduler, epoch_batches, batch_loss, settings=settings, total=total, output=output,
        save_model=lambda model_dir: save_encoder(model, tokenizer, model_dir), logger=logger, name="sentmask",
        progress=progress, counters={"targets": lambda examples: sum(len(ex.anchor_rows) for ex in examples)},
        generators=[generator])
    model_dir = Path(output) / "model"
    info = {
        "settings": asdict(settings),
        "papers": len(papers),
        "windows_per_epoch": n_windows,
        "steps": result.steps,
        "targets": result.counts["targets"],
        "seconds": round(result.seconds, 1),
        "history": result.history,
        "model": str(model_dir),
    }
    (Path(output) / "sentmask.json").write_text(json.dumps(info, indent=2), encoding="utf8")
    return info


def save_encoder(model, tokenizer, path: Union[str, Path]) -> None:
    """The encoder alone (an MLM head is left out) with its tokenizer, as
    safetensors: a directory ``AutoModel``/spacy-transformers load."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    base_encoder(model).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)

