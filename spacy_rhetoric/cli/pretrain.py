"""``spacy-rhetoric pretrain-sentmask`` and ``train-cosaemb``: self-supervised
pre-training of the shared transformer (``spacy_rhetoric.pretrain``)."""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ..errors import RhetoricError
from ..util import torch_device
from . import app
from .common import GPU_ID_HELP, guard, split_ids


@app.command("pretrain-sentmask")
def pretrain_sentmask_cli(
    input_path: Path = typer.Argument(..., metavar="INPUT", exists=True,
                                      help="CL-SciSumm directory (reference papers) or a .spacy corpus of papers"),
    output: Path = typer.Argument(..., metavar="OUTPUT", help="Output directory (OUTPUT/model: HF model dir)"),
    model: str = typer.Option("sentence-transformers/all-MiniLM-L6-v2", "--model", help="Starting encoder"),
    limit: int = typer.Option(0, "--limit", help="Papers to read (0 = all)"),
    window_sents: int = typer.Option(8, "--window-sents", help="Sentences per window"),
    targets_per_window: int = typer.Option(4, "--targets-per-window", help="Target sentences per window"),
    max_sentence_tokens: int = typer.Option(48, "--max-sentence-tokens", help="Word pieces kept per sentence"),
    n_negatives: int = typer.Option(4, "--negatives", help="Replaced copies (negatives) per target"),
    temperature: float = typer.Option(1.0, "--temperature", help="InfoNCE temperature (1 = plain dot products)"),
    mlm_weight: float = typer.Option(0.0, "--mlm-weight", help="Weight of the masked-LM term (0 = off)"),
    learn_rate: float = typer.Option(2e-5, "--learn-rate"),
    warmup_steps: int = typer.Option(100, "--warmup-steps"),
    windows_per_step: int = typer.Option(2, "--windows-per-step", help="Windows per optimizer step"),
    epochs: int = typer.Option(1, "--epochs"),
    max_steps: int = typer.Option(0, "--max-steps", help="Stop after this many steps (0 = epochs decide)"),
    seed: int = typer.Option(0, "--seed"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help=GPU_ID_HELP),
) -> None:
    """SENT-MASK pre-training; writes a model directory for
    [components.transformer.model.name] name = OUTPUT/model. Checkpoints
    every 200 steps go to OUTPUT/checkpoint; rerunning the same command resumes."""
    from ..pretrain.sentmask import SentMaskSettings, read_papers, train_sentmask

    with guard("pretrain-sentmask"):
        settings = SentMaskSettings(
            model=model, window_sents=window_sents, targets_per_window=targets_per_window,
            max_sentence_tokens=max_sentence_tokens, n_negatives=n_negatives, temperature=temperature,
            mlm_weight=mlm_weight, learn_rate=learn_rate, warmup_steps=warmup_steps,
            windows_per_step=windows_per_step, epochs=epochs, max_steps=max_steps, seed=seed, gpu_id=gpu_id,
        )
        settings.check()
        torch_device(gpu_id)  # a GPU that is not there: one line, before any work
        papers = read_papers(input_path, limit=limit)
        if not papers:
            raise RhetoricError(f"no papers read from {input_path}")
        msg.info(f"{len(papers)} papers, {sum(len(p.sentences) for p in papers)} sentences")
        info = train_sentmask(papers, output, settings)
    last = info["history"][-1]["loss"] if info["history"] else float("nan")
    msg.good(f"{info['steps']} steps, {info['targets']} targets, last loss {last:.3f}, "
             f"{info['seconds']} s -> {info['model']}")


@app.command("train-cosaemb")
def train_cosaemb_cli(
    input_path: Path = typer.Argument(..., metavar="INPUT", exists=True, file_okay=False,
                                      help="CL-SciSumm directory (topics: reference + citing papers)"),
    output: Path = typer.Argument(..., metavar="OUTPUT", help="Output directory (OUTPUT/model: HF model dir)"),
    model: str = typer.Option("sentence-transformers/all-MiniLM-L6-v2", "--model", help="Starting encoder"),
    limit_topics: int = typer.Option(0, "--limit-topics", help="Topics to read (0 = all)"),
    topics: Optional[str] = typer.Option(None, "--topics", help="Only these topic ids (comma-separated or a file)"),
    exclude_topics: Optional[str] = typer.Option(None, "--exclude-topics",
                                                 help="Topic ids to leave out, e.g. held-out ones (comma-separated or a file)"),
    max_citing: int = typer.Option(0, "--max-citing", help="Citing papers per topic (0 = all)"),
    max_length: int = typer.Option(256, "--max-length", help="Word pieces per chunk"),
    m_local: float = typer.Option(3.0, "--m-local"),
    m_global: float = typer.Option(2.0, "--m-global"),
    m_inter: float = typer.Option(1.0, "--m-inter"),
    learn_rate: float = typer.Option(2e-5, "--learn-rate"),
    warmup_steps: int = typer.Option(50, "--warmup-steps"),
    batch_size: int = typer.Option(8, "--batch-size", help="Triplets per step"),
    epochs: int = typer.Option(1, "--epochs"),
    max_steps: int = typer.Option(0, "--max-steps", help="Stop after this many steps (0 = epochs decide)"),
    seed: int = typer.Option(0, "--seed"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help=GPU_ID_HELP),
) -> None:
    """COSAEMB section-aware chunk embeddings (graded triplet margins); the
    model directory is the model_name of rhetoric_section_encoder. Checkpoints
    every 200 steps go to OUTPUT/checkpoint; rerunning the same command resumes."""
    from ..pretrain.cosaemb import CosaembSettings, clscisumm_corpus, train_cosaemb

    with guard("train-cosaemb"):
        settings = CosaembSettings(
            model=model, max_length=max_length, m_local=m_local, m_global=m_global, m_inter=m_inter,
            learn_rate=learn_rate, warmup_steps=warmup_steps, batch_size=batch_size, epochs=epochs,
            max_steps=max_steps, seed=seed, gpu_id=gpu_id,
        )
        settings.check()
        torch_device(gpu_id)
        corpus = clscisumm_corpus(input_path, limit_topics=limit_topics, max_citing=max_citing,
                                  include=split_ids(topics), exclude=split_ids(exclude_topics))
        if not corpus.papers:
            raise RhetoricError(f"no papers read from {input_path} (topic selection left none?)")
        msg.info(f"{len(corpus.papers)} papers, {sum(len(c) for c in corpus.cites.values())} citation links")
        info = train_cosaemb(corpus, output, settings)
    last = info["history"][-1]["loss"] if info["history"] else float("nan")
    msg.good(f"triplets {info['triplets']}, {info['steps']} steps, last loss {last:.3f}, "
             f"{info['seconds']} s -> {info['model']}")
