"""COSAEMB's chunk inputs and its encoder at inference: what the
``rhetoric_section_encoder`` component (``pipeline/section_encoder.py``) and
the COSAEMB training (``pretrain/cosaemb.py``, which describes the chunks)
both need.

* ``paper_chunks``: the chunk inputs of one paper (sections cut by
  ``iter_sections`` into chunks of whole sentences by ``plan_chunks``, section
  special tokens ``SECTION_TOKENS`` in front);
* ``categorise_sections``: raw headings -> section categories (the section
  tagger's ``tag_headings``);
* ``load_cosaemb_encoder``, ``encode_inputs``: the encoder with the section
  tokens, and chunk vectors (mean of the last hidden states);
* ``pad_batch``, ``to_model_device``: torch batches of word-piece ids.

COSAEMB (``plan_chunks``): a section's sentences are packed greedily into
chunks of at most ``budget`` word pieces; every chunk after the first starts
with the previous chunk's last sentence (CoSaEmb §3.2). A sentence longer than
the budget is a chunk of its own (the tokenizer truncates it).
"""
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from ..errors import RhetoricError
from ..section_headings import ABSTRACT, CONCLUSION, INTRODUCTION, METHOD, RELATED_WORK, RESULTS, TITLE

SECTION_TOKENS: Dict[str, str] = {
    INTRODUCTION: "[INTR]",
    RELATED_WORK: "[RW]",
    METHOD: "[METH]",
    RESULTS: "[RES]",
    CONCLUSION: "[CONC]",
    ABSTRACT: "[ABS]",
    TITLE: "[TTL]",
}
MAX_TITLE_TOKENS = 32


@dataclass
class ChunkInput:
    paper_id: str
    section: str  # category
    index: int  # chunk number within the section (0 = first)
    sentences: Tuple[int, int]  # [start, end) sentence indices in the paper
    repeated: bool  # sentence ``start`` repeats the previous chunk's last one
    input_ids: List[int]


@dataclass
class PaperChunks:
    paper_id: str
    abstract: Optional[ChunkInput]
    sections: Dict[str, List[List[ChunkInput]]] = field(default_factory=dict)  # category -> runs -> chunks

    def chunks(self) -> List[ChunkInput]:
        return [c for runs in self.sections.values() for run in runs for c in run]


# --------------------------------------------------------------------------
# Tokenizer and sections


def add_section_tokens(tokenizer, model=None) -> None:
    """Add the section special tokens (and resize ``model``'s embeddings)."""
    missing = [t for t in SECTION_TOKENS.values() if t not in tokenizer.get_vocab()]
    if missing:
        tokenizer.add_special_tokens({"additional_special_tokens": missing}, replace_additional_special_tokens=False)
    if model is not None and model.get_input_embeddings().num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))


def categorise_sections(sections: Sequence[Optional[str]], tagger=None) -> List[str]:
    """Section categories for raw per-sentence headings (CL-SciSumm section
    titles, "abstract", "title") in reading order, through the section
    tagger's ``tag_headings``; a value that already is a category is kept."""
    from ..section_headings import CATEGORIES

    if all(s in CATEGORIES for s in sections if s is not None):
        return [s or "other" for s in sections]
    if tagger is None:
        tagger = default_section_tagger()
    order = list(dict.fromkeys(sections))
    tags = dict(zip(order, tagger.tag_headings(order)))
    return [tags.get(s) or "other" for s in sections]


_TAGGER = None


def default_section_tagger():
    global _TAGGER
    if _TAGGER is None:
        import spacy

        _TAGGER = spacy.blank("en").add_pipe("rhetoric_section_tagger")
    return _TAGGER


# --------------------------------------------------------------------------
# Chunks


def _tok(tokenizer, name: str) -> int:
    return tokenizer.convert_tokens_to_ids(name)


def paper_chunks(
    paper_id: str,
    sentence_ids: Sequence[Sequence[int]],
    categories: Sequence[str],
    title_ids: Optional[Sequence[int]],
    tokenizer,
    max_length: int,
) -> PaperChunks:
    """The chunk inputs of one paper (see module doc). ``sentence_ids``: word
    pieces of each sentence (no special tokens); ``categories``: each
    sentence's section category."""
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    title_part: List[int] = []
    if title_ids:
        title_part = [_tok(tokenizer, SECTION_TOKENS[TITLE])] + list(title_ids[:MAX_TITLE_TOKENS]) + [sep_id]
    out = PaperChunks(paper_id, None)
    # sentences: [CLS] (title part) [SEC] ... [SEP]; later chunks: [SEC] repeated [SEC] ... -> 2 section tokens
    budget = max_length - 2 - len(title_part) - 2
    if budget < 1:
        raise RhetoricError(f"paper_chunks: max_length {max_length} leaves no room for sentences")
    for section, start, end in iter_sections(list(categories)):
        if section == ABSTRACT:
            ids = [cls_id] + title_part + [_tok(tokenizer, SECTION_TOKENS[ABSTRACT])]
            for i in range(start, end):
                ids.extend(sentence_ids[i])
            ids = ids[: max_length - 1] + [sep_id]
            if out.abstract is None:
                out.abstract = ChunkInput(paper_id, ABSTRACT, 0, (start, end), False, ids)
            continue
        if section == TITLE:
            continue
        token = SECTION_TOKENS.get(section)
        lengths = [len(sentence_ids[i]) for i in range(start, end)]
        run: List[ChunkInput] = []
        for k, chunk in enumerate(plan_chunks(lengths, budget)):
            first, last = start + chunk.start, start + chunk.end
            ids = [cls_id] + (title_part if k == 0 else [])
            sec = [_tok(tokenizer, token)] if token else []
            ids += sec
            for i in range(first, last):
                ids.extend(sentence_ids[i])
                if i == first and chunk.repeated:
                    ids += sec
            ids = ids[: max_length - 1] + [sep_id]
            run.append(ChunkInput(paper_id, section, k, (first, last), chunk.repeated, ids))
        out.sections.setdefault(section, []).append(run)
    return out


@dataclass(frozen=True)
class Chunk:
    """Sentences ``start:end`` (indices into the section's sentence list);
    ``repeated`` is True when sentence ``start`` is the previous chunk's last
    sentence."""

    start: int
    end: int
    repeated: bool


def plan_chunks(lengths: Sequence[int], budget: int) -> List[Chunk]:
    """Chunks of whole sentences of one section (lengths in word pieces), each
    at most ``budget`` word pieces when its sentences fit, the previous chunk's
    last sentence repeated at the start of the next one. Every sentence is in
    some chunk; consecutive chunks share exactly one sentence."""
    if budget < 1:
        raise RhetoricError(f"plan_chunks: budget must be >= 1, got {budget}")
    n = len(lengths)
    chunks: List[Chunk] = []
    i = 0  # first sentence not yet in any chunk
    while i < n:
        repeated = bool(chunks)
        start = i - 1 if repeated else i
        total = sum(lengths[start:i]) + lengths[i]
        if repeated and total > budget:
            # the repeated sentence and the next one do not fit together:
            # the next one starts a chunk on its own (no repetition possible)
            start, repeated, total = i, False, lengths[i]
        j = i + 1
        while j < n and total + lengths[j] <= budget:
            total += lengths[j]
            j += 1
        chunks.append(Chunk(start, j, repeated))
        i = j
    return chunks


def iter_sections(sections: Sequence[Optional[str]]) -> Iterator[Tuple[Optional[str], int, int]]:
    """Maximal runs of equal section values: (section, start, end)."""
    start = 0
    for i in range(1, len(sections) + 1):
        if i == len(sections) or sections[i] != sections[start]:
            if i > start:
                yield sections[start], start, i
            start = i


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int) -> Tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for i, seq in enumerate(sequences):
        ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[i, : len(seq)] = 1
    return ids, mask


def to_model_device(model, *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
    """``tensors`` on the device of ``model``'s parameters (one copy each per batch)."""
    device = next(model.parameters()).device
    return tuple(t.to(device) for t in tensors)


def load_cosaemb_encoder(model_name: str):
    from transformers import AutoModel, AutoTokenizer

    from ..util import resolve_hf_model
    from .hf_safe import no_remote_code

    path = resolve_hf_model(model_name)
    with no_remote_code(model_name):
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        model = AutoModel.from_pretrained(path, trust_remote_code=False)
    add_section_tokens(tokenizer, model)
    return tokenizer, model


def encode_inputs(model, sequences: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """Mean of the last hidden states over each sequence's word pieces: [N, D]."""
    ids, mask = to_model_device(model, *pad_batch(sequences, pad_id))
    hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
