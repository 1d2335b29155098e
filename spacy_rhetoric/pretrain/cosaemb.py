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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Union

import torch

from ..errors import RhetoricError
from ..losses import graded_triplet_loss
from ..ml.section_chunks import (  # noqa: F401 - re-exported: the chunks COSAEMB trains on
    MAX_TITLE_TOKENS,
    SECTION_TOKENS,
    ChunkInput,
    PaperChunks,
    add_section_tokens,
    categorise_sections,
    default_section_tagger,
    encode_inputs,
    load_cosaemb_encoder,
    pad_batch,
    paper_chunks,
)
from ..section_headings import CONCLUSION, INTRODUCTION, METHOD, RELATED_WORK, RESULTS
from ..util import torch_device
from .sentmask import Paper, clscisumm_papers
from .windows import TrainSettings, adamw_with_warmup, run_pretraining

logger = logging.getLogger(__name__)

BODY_SECTIONS = (INTRODUCTION, RELATED_WORK, METHOD, RESULTS, CONCLUSION)
LOCAL, GLOBAL, INTER = "local", "global", "inter"


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
            raise RhetoricError("COSAEMB margins must satisfy 0 <= m_inter <= m_global <= m_local")
        if self.max_length < 16:
            raise RhetoricError("COSAEMB: max_length must be >= 16")


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
        raise RhetoricError("COSAEMB: no triplets (papers need sections, abstracts and citations)")
    total = math.ceil(len(triplets) / settings.batch_size) * settings.epochs
    if settings.max_steps:
        total = min(total, settings.max_steps)
    optimizer, scheduler = adamw_with_warmup(model, settings.learn_rate, settings.weight_decay,
                                             settings.warmup_steps, total)

    def epoch_batches(epoch: int) -> Iterator[List[Triplet]]:
        order = list(triplets)
        rng.shuffle(order)
        return (order[b: b + settings.batch_size] for b in range(0, len(order), settings.batch_size))

    model.train()

    def save_model(model_dir: Path) -> None:
        model_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(model_dir, safe_serialization=True)
        tokenizer.save_pretrained(model_dir)

    result = run_pretraining(
        model, optimizer, scheduler, epoch_batches,
        lambda batch: triplet_batch_loss(model, batch, tokenizer.pad_token_id),
        settings=settings, total=total, output=output, save_model=save_model, logger=logger, name="cosaemb",
        progress=progress)
    output = Path(output)
    model_dir = output / "model"
    info = {"settings": asdict(settings), "papers": len(corpus.papers), "triplets": kinds, "steps": result.steps,
            "seconds": round(result.seconds, 1), "history": result.history, "model": str(model_dir)}
    (output / "cosaemb.json").write_text(json.dumps(info, indent=2), encoding="utf8")
    return info
