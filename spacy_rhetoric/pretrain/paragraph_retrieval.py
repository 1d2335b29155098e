"""COSAEMB's full-text paragraph retrieval evaluation (CoSaEmb §4, Table 6).

Every section chunk of a set of held-out papers is a query; the candidates
are all other chunks of the same papers and of the other papers; Recall@k is
the share of queries with a chunk of their own paper among the k nearest
(``evaluation.metrics.same_group_recall``; Euclidean distance on the raw chunk
vectors, as in the paper, and cosine as a second view).

Chunks are those COSAEMB trains on (``ml.section_chunks.paper_chunks``: whole
sentences up to ``max_length`` word pieces, the section's special token in
front, the previous chunk's last sentence repeated) plus each paper's
abstract, with two choices made for the evaluation:

* no title part: COSAEMB's training puts ``[TTL] title [SEP]`` in front of
  each section's first chunk, which would let any model match the chunks of
  one paper by their shared title text instead of their content;
* sections of category "other" (back matter, unknown headings) are left out,
  as in training.

A model without the section tokens (e.g. all-MiniLM-L6-v2 as released) reads
the same chunks with those tokens removed, so the baseline row sees the same
text and no randomly initialised embeddings.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy
import torch

from ..errors import RhetoricError
from .cosaemb import BODY_SECTIONS, ChunkInput, add_section_tokens, chunk_paper, encode_inputs
from .sentmask import Paper


@dataclass
class RetrievalChunk:
    paper_id: str
    section: str
    input_ids: List[int]


def retrieval_chunks(papers: Sequence[Paper], tokenizer, max_length: int, tagger=None) -> List[RetrievalChunk]:
    """The abstract and body-section chunks of every paper (see module doc);
    ``tokenizer`` must know the section tokens (``ml.section_chunks.add_section_tokens``)."""
    out: List[RetrievalChunk] = []
    for paper in papers:
        pc = chunk_paper(paper, tokenizer, max_length, tagger, title=False)
        chunks: List[ChunkInput] = [pc.abstract] if pc.abstract is not None else []
        chunks += [c for c in pc.chunks() if c.section in BODY_SECTIONS]
        out.extend(RetrievalChunk(c.paper_id, c.section, c.input_ids) for c in chunks)
    return out


def encode_chunks(model, chunks: Sequence[RetrievalChunk], pad_id: int, *, batch_size: int = 16,
                  progress: bool = False) -> numpy.ndarray:
    """Mean-pooled last hidden states of every chunk, ``[n, d]`` float32, in
    the order of ``chunks``. Token ids the model has no embedding for (section
    tokens of a model that was never given them) are removed."""
    n_vocab = model.get_input_embeddings().num_embeddings
    inputs = [[i for i in c.input_ids if i < n_vocab] for c in chunks]
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))  # less padding per batch
    out = numpy.zeros((len(inputs), model.config.hidden_size), dtype="float32")
    batches = range(0, len(order), batch_size)
    if progress:
        from tqdm import tqdm

        batches = tqdm(batches, desc="chunks", unit="batch", leave=False)
    model.eval()
    with torch.no_grad():
        for b in batches:
            rows = order[b: b + batch_size]
            out[rows] = encode_inputs(model, [inputs[i] for i in rows], pad_id).float().cpu().numpy()
    return out


def paragraph_retrieval(model_name: str, papers: Sequence[Paper], *, max_length: int = 256, batch_size: int = 16,
                        ks: Sequence[int] = (1, 3), metrics: Sequence[str] = ("euclidean", "cosine"),
                        tagger=None, progress: bool = False) -> Dict[str, object]:
    """Recall@k of same-paper chunks for the encoder ``model_name`` (a hub
    name resolved offline, or a COSAEMB model directory) over ``papers``."""
    from transformers import AutoModel, AutoTokenizer

    from ..evaluation.metrics import same_group_recall
    from ..ml.hf_safe import no_remote_code
    from ..util import resolve_hf_model, torch_device

    path = resolve_hf_model(model_name)
    with no_remote_code(model_name):
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        add_section_tokens(tokenizer)  # chunking needs their ids; a model without them never sees them
        model = AutoModel.from_pretrained(path, trust_remote_code=False).to(torch_device())
    chunks = retrieval_chunks(papers, tokenizer, max_length, tagger)
    if len({c.paper_id for c in chunks}) < 2:
        raise RhetoricError("paragraph retrieval needs chunks from at least 2 papers")
    vectors = encode_chunks(model, chunks, tokenizer.pad_token_id, batch_size=batch_size, progress=progress)
    groups = [c.paper_id for c in chunks]
    result: Dict[str, object] = {
        "model": model_name, "papers": len(set(groups)), "chunks": len(chunks),
        "section_tokens_seen": model.get_input_embeddings().num_embeddings >= len(tokenizer),
    }
    for metric in metrics:
        result[metric] = same_group_recall(vectors, groups, ks, metric=metric)
    return result


def held_out_papers(roots: Sequence, *, topics: Optional[Sequence[str]] = None, limit: int = 0,
                    exclude_ids: Sequence[str] = ()) -> List[Paper]:
    """Reference papers of the CL-SciSumm topics under ``roots`` (only
    ``topics`` when given), at most ``limit`` (0 = all), none whose paper id
    is in ``exclude_ids`` (the papers a model was trained on)."""
    from ..readers.clscisumm import select_topics
    from .sentmask import clscisumm_papers

    skip = set(exclude_ids)
    out: List[Paper] = []
    for topic in select_topics(roots, include=topics):
        for paper in clscisumm_papers(topic.root):
            if paper.paper_id not in skip:
                out.append(paper)
                skip.add(paper.paper_id)
        if limit and len(out) >= limit:
            break
    return out
