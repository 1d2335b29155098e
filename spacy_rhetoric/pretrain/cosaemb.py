"""COSAEMB: section-aware chunk embeddings with graded margins (CoSaEmb §3.2-3.4).

Chunks (``paper_chunks``): each section of a paper (a run of sentences with
the same section category, ``section_headings.CATEGORIES``; raw headings are
categorised with the section tagger's ``tag_headings``) is split into chunks
of whole sentences up to the encoder's length (``windows.plan_chunks``), the
previous chunk's last sentence repeated at the start of the next one, with
the section's special token in front (CoSaEmb §3.2)::

    first chunk:  [CLS] [TTL] title [SEP] [INTR] l_1 ... l_i [SEP]
    next chunks:  [CLS] [INTR] l_i [INTR] l_i+1 ... l_j [SEP]
    abstract:     [CLS] [TTL] title [SEP] [ABS] abstract [SEP]

(no ``[TTL] title [SEP]`` part when the title is unknown). Sections of
category "other" (back matter, unknown headings) get no special token and
take part in no triplet.

Triplets (``build_triplets``), margins ``m_inter = 1 < m_global = 2 < m_local = 3``:

* local: (chunk i+1, chunk i of the same section, a chunk of another paper);
* global: (a section's first chunk, the paper's own abstract, the abstract of
  a paper it cites);
* inter-document: (abstract, a cited paper's abstract, the abstract of a paper
  it does not cite).

Citations (``clscisumm_corpus``): in a CL-SciSumm topic every citing paper
(``Citance_XML``) cites the topic's reference paper.

Loss: ``losses.graded_triplet_loss`` (the explicit-triplet form of
``MarginGradedTripletLoss``: squared Euclidean distances on raw vectors),
vectors the mean of the encoder's last hidden states over the chunk's word
pieces. The model is written with ``save_pretrained`` (safetensors) and read
by the ``rhetoric_section_encoder`` component.
"""
import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

import torch

from ..losses import graded_triplet_loss
from ..section_headings import ABSTRACT, CONCLUSION, INTRODUCTION, METHOD, RELATED_WORK, RESULTS, TITLE
from ..util import torch_device
from .sentmask import Paper, clscisumm_papers, pad_batch, to_model_device
from .windows import TrainSettings, adamw_with_warmup, iter_sections, plan_chunks

logger = logging.getLogger(__name__)

SECTION_TOKENS: Dict[str, str] = {
    INTRODUCTION: "[INTR]",
    RELATED_WORK: "[RW]",
    METHOD: "[METH]",
    RESULTS: "[RES]",
    CONCLUSION: "[CONC]",
    ABSTRACT: "[ABS]",
    TITLE: "[TTL]",
}
BODY_SECTIONS = (INTRODUCTION, RELATED_WORK, METHOD, RESULTS, CONCLUSION)
LOCAL, GLOBAL, INTER = "local", "global", "inter"
MAX_TITLE_TOKENS = 32


@dataclass
class CosaembSettings(TrainSettings):
    max_length: int = 256  # word pieces per chunk (MiniLM was trained on 256; at most 512)
    m_local: float = 3.0
    m_global: float = 2.0
    m_inter: float = 1.0
    warmup_steps: int = 50
    batch_size: int = 8  # triplets per step

    def check(self) -> None:
        if not 0 <= self.m_inter <= self.m_global <= self.m_local:
            raise ValueError("COSAEMB margins must satisfy 0 <= m_inter <= m_global <= m_local")
        if self.max_length < 16:
            raise ValueError("COSAEMB: max_length must be >= 16")


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
        raise ValueError(f"paper_chunks: max_length {max_length} leaves no room for sentences")
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


def chunk_paper(paper: Paper, tokenizer, max_length: int, tagger=None, *, title: bool = True) -> PaperChunks:
    """``paper_chunks`` of a ``Paper`` (``title=False``: no title part, as the
    paragraph retrieval evaluation reads papers)."""
    categories = categorise_sections(paper.sections or [None] * len(paper.sentences), tagger)
    sentence_ids = tokenizer(paper.sentences, add_special_tokens=False)["input_ids"]
    title_ids = tokenizer(paper.title, add_special_tokens=False)["input_ids"] if title and paper.title else None
    return paper_chunks(paper.paper_id, sentence_ids, categories, title_ids, tokenizer, max_length)


# --------------------------------------------------------------------------
# Corpus and triplets


@dataclass
class CitationCorpus:
    papers: Dict[str, Paper]
    cites: Dict[str, Set[str]]  # citing paper id -> cited paper ids


def clscisumm_corpus(root: Union[str, Path], *, limit_topics: int = 0, max_citing: int = 0,
                     include: Optional[Sequence[str]] = None,
                     exclude: Optional[Sequence[str]] = None) -> CitationCorpus:
    """Reference and citing papers of the CL-SciSumm topics under ``root``:
    each citing paper of a topic cites the topic's reference paper
    (``max_citing``: citing papers read per topic, 0 = all; ``include`` /
    ``exclude``: topic ids, as ``readers.clscisumm.select_topics``)."""
    from ..readers.clscisumm import select_topics

    papers: Dict[str, Paper] = {}
    cites: Dict[str, Set[str]] = {}
    for n, topic in enumerate(select_topics([root], include=include, exclude=exclude)):
        if limit_topics and n >= limit_topics:
            break
        read = list(clscisumm_papers(topic.root, citing=True))
        if not read:
            continue
        ref = read[0]  # clscisumm_papers yields the reference paper first
        citing = [p for p in read[1:] if p.paper_id != ref.paper_id]
        if max_citing:
            citing = citing[:max_citing]
        for p in [ref] + citing:
            papers.setdefault(p.paper_id, p)
        for p in citing:
            cites.setdefault(p.paper_id, set()).add(ref.paper_id)
    return CitationCorpus(papers, cites)


@dataclass
class Triplet:
    kind: str  # local | global | inter
    anchor: ChunkInput
    positive: ChunkInput
    negative: ChunkInput
    margin: float


def build_triplets(chunks: Dict[str, PaperChunks], cites: Dict[str, Set[str]], settings: CosaembSettings,
                   rng: random.Random) -> List[Triplet]:
    """All local, global and inter-document triplets of the corpus (one
    negative sampled per triplet)."""
    ids = sorted(chunks)
    abstracts = {pid: pc.abstract for pid, pc in chunks.items() if pc.abstract is not None}
    other_chunks = {pid: [c for c in pc.chunks() if c.section in BODY_SECTIONS] for pid, pc in chunks.items()}
    out: List[Triplet] = []
    for pid in ids:
        pc = chunks[pid]
        others = [o for o in ids if o != pid and other_chunks[o]]
        for section in BODY_SECTIONS:
            for run in pc.sections.get(section, []):
                for a, b in zip(run, run[1:]):
                    if others:
                        neg = rng.choice(other_chunks[rng.choice(others)])
                        out.append(Triplet(LOCAL, b, a, neg, settings.m_local))
        cited = sorted(c for c in cites.get(pid, ()) if c in abstracts and c != pid)
        if pc.abstract is not None and cited:
            for section in BODY_SECTIONS:
                for run in pc.sections.get(section, [])[:1]:
                    out.append(Triplet(GLOBAL, run[0], pc.abstract, abstracts[rng.choice(cited)], settings.m_global))
            uncited = [o for o in sorted(abstracts) if o != pid and o not in cites.get(pid, ())]
            if uncited:
                for c in cited:
                    out.append(Triplet(INTER, pc.abstract, abstracts[c], abstracts[rng.choice(uncited)],
                                       settings.m_inter))
    return out


# --------------------------------------------------------------------------
# Model and training


def load_cosaemb_encoder(model_name: str):
    from transformers import AutoModel, AutoTokenizer

    from ..util import resolve_hf_model

    path = resolve_hf_model(model_name)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path)
    add_section_tokens(tokenizer, model)
    return tokenizer, model


def encode_inputs(model, sequences: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """Mean of the last hidden states over each sequence's word pieces: [N, D]."""
    ids, mask = to_model_device(model, *pad_batch(sequences, pad_id))
    hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)


def triplet_batch_loss(model, triplets: Sequence[Triplet], pad_id: int) -> torch.Tensor:
    """graded_triplet_loss over ``triplets``; every distinct input encoded once."""
    index: Dict[int, int] = {}
    sequences: List[List[int]] = []

    def row(chunk: ChunkInput) -> int:
        if id(chunk) not in index:
            index[id(chunk)] = len(sequences)
            sequences.append(chunk.input_ids)
        return index[id(chunk)]

    rows = [(row(t.anchor), row(t.positive), row(t.negative)) for t in triplets]
    vectors = encode_inputs(model, sequences, pad_id)
    a, p, n = (vectors[[r[k] for r in rows]] for k in range(3))
    margins = torch.tensor([t.margin for t in triplets], dtype=vectors.dtype, device=vectors.device)
    return graded_triplet_loss(a, p, n, margins)


def train_cosaemb(corpus: CitationCorpus, output: Union[str, Path], settings: Optional[CosaembSettings] = None,
                  *, progress: bool = True) -> Dict[str, Any]:
    """Train on the corpus's triplets; writes ``output/model`` (save_pretrained)
    and ``output/cosaemb.json``."""
    settings = settings or CosaembSettings()
    settings.check()
    rng = random.Random(settings.seed)
    torch.manual_seed(settings.seed)
    tokenizer, model = load_cosaemb_encoder(settings.model)
    model.to(torch_device(settings.gpu_id))
    tagger = default_section_tagger()
    chunks = {pid: chunk_paper(p, tokenizer, settings.max_length, tagger) for pid, p in corpus.papers.items()}
    triplets = build_triplets(chunks, corpus.cites, settings, rng)
    kinds = {k: sum(t.kind == k for t in triplets) for k in (LOCAL, GLOBAL, INTER)}
    if not triplets:
        raise ValueError("COSAEMB: no triplets (papers need sections, abstracts and citations)")
    total = math.ceil(len(triplets) / settings.batch_size) * settings.epochs
    if settings.max_steps:
        total = min(total, settings.max_steps)
    optimizer, scheduler = adamw_with_warmup(model, settings.learn_rate, settings.weight_decay,
                                             settings.warmup_steps, total)
    model.train()
    history: List[Dict[str, float]] = []
    step, start, acc, acc_n = 0, time.time(), 0.0, 0
    for epoch in range(settings.epochs):
        order = list(triplets)
        rng.shuffle(order)
        for b in range(0, len(order), settings.batch_size):
            if step >= total:
                break
            loss = triplet_batch_loss(model, order[b: b + settings.batch_size], tokenizer.pad_token_id)
            optimizer.zero_grad()
            loss.backward()
            if settings.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
            optimizer.step()
            scheduler.step()
            step += 1
            acc += float(loss.detach())
            acc_n += 1
            if step % settings.log_every == 0 or step == total:
                row = {"step": step, "epoch": epoch, "loss": acc / acc_n, "seconds": round(time.time() - start, 1)}
                history.append(row)
                acc, acc_n = 0.0, 0
                if progress:
                    logger.warning("cosaemb %s", json.dumps(row))
    output = Path(output)
    model_dir = output / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(model_dir, safe_serialization=True)
    tokenizer.save_pretrained(model_dir)
    info = {"settings": asdict(settings), "papers": len(corpus.papers), "triplets": kinds, "steps": step,
            "seconds": round(time.time() - start, 1), "history": history, "model": str(model_dir)}
    (output / "cosaemb.json").write_text(json.dumps(info, indent=2), encoding="utf8")
    return info
