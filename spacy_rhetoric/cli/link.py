"""``spacy-rhetoric link``, ``link-train``, ``link-word2vec``: CitRet cited
text span retrieval on CL-SciSumm (task 1a).

    # rank reference sentences for citing sentences
    spacy-rhetoric link REFERENCE CITANCES [--encoder DIR] [--vectors FILE] [-k 3]
    # task 1a P/R/F1 over topics (every annotator's file of a topic merged)
    spacy-rhetoric link --evaluate ROOT [ROOT ...] --topics C98-1097,D09-1023 ...
    # fine-tune the encoder / train Word2Vec
    spacy-rhetoric link-train ROOT [ROOT ...] --exclude-topics ... --output DIR
    spacy-rhetoric link-word2vec ROOT [ROOT ...] --output w2v.kv
"""
import json
import os
import re
import sys
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from . import app

ANN_RE = re.compile(r"citance\s+number\s*:", re.IGNORECASE)


def _split_ids(value: Optional[str]) -> Optional[List[str]]:
    if value is None:
        return None
    path = Path(value)
    if path.is_file():
        value = path.read_text(encoding="utf8").replace("\n", ",")
    return [v.strip() for v in value.split(",") if v.strip()]


def _threads(threads: int) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if threads > 0:
        import torch

        torch.set_num_threads(threads)


def build_linker(
    model: Optional[Path] = None,
    encoder: Optional[str] = None,
    vectors: Optional[Path] = None,
    use_wce: bool = True,
    use_denoising: bool = True,
    use_wmd: bool = True,
    k: int = 3,
    preprocess_for_encoder: bool = True,
):
    """``(nlp, linker)``: a saved pipeline with a linker (``model``) or a blank
    English pipeline with a new linker; ``encoder``/``vectors``/switches
    override the configuration."""
    import spacy

    from ..citret.wmd import load_vectors

    if model is not None:
        nlp = spacy.load(model)
        names = [n for n, p in nlp.pipeline if p.__class__.__name__ == "CitanceLinker"]
        if not names:
            msg.fail(f"{model} has no rhetoric_citance_linker component", exits=1)
        linker = nlp.get_pipe(names[0])
    else:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        config = {"top_k": k, "use_wmd": use_wmd}
        if encoder is not None:
            config["model_name"] = str(encoder)
        linker = nlp.add_pipe("rhetoric_citance_linker", config=config)
    linker.settings.use_wce = use_wce
    linker.settings.use_denoising = use_denoising
    linker.settings.use_wmd = use_wmd
    linker.settings.preprocess_for_encoder = preprocess_for_encoder
    linker.cfg.update(linker.settings.to_dict())
    linker.cfg["top_k"] = k
    if encoder is not None and model is not None:
        from ..citret.encoder import SentenceEncoder

        linker.set_encoder(SentenceEncoder(str(encoder), max_length=linker.cfg["max_length"]))
    if vectors is not None:
        linker.set_vectors(load_vectors(vectors), path=str(vectors))
    if use_wmd and linker.vectors is None:
        msg.fail("WMD is on but no word vectors were given: use --vectors FILE (see link-word2vec) or --no-wmd",
                 exits=1)
    return nlp, linker


def _read_reference(nlp, path: Path):
    from ..readers.clscisumm import read_reference_xml, reference_doc
    from ..readers.common import doc_from_sentences

    if path.suffix.lower() == ".xml":
        return reference_doc(nlp, read_reference_xml(path))
    lines = [line.strip() for line in path.read_text(encoding="utf8").splitlines()]
    sents = [line for line in lines if line]
    # plain text: one sentence per line, sid = line number (1-based, blank lines counted)
    sids = [str(i + 1) for i, line in enumerate(lines) if line]
    return doc_from_sentences(nlp, sents, sids=sids, doc_id=path.stem)


def _read_citances(path: Path):
    """``[(citance_text, extra_fields)]`` from an annotation file or text lines."""
    from ..citret.evaluation import merge_annotators
    from ..readers.clscisumm import read_annotations

    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf8", errors="replace")
    first = next((line for line in text.splitlines() if line.strip()), "")
    if str(path) != "-" and (ANN_RE.search(first) or ".ann" in path.name):
        records, skipped = read_annotations(path)
        if skipped:
            msg.warn(f"{path}: {skipped} malformed annotation lines skipped")
        out = []
        for cit in merge_annotators(records):
            if cit.text:
                rec = cit.records[0]
                out.append((cit.text, {"citing_article": rec.citing_article,
                                       "citance_number": rec.citance_number,
                                       "gold": sorted(cit.gold)}))
        return out
    return [(line.strip(), {}) for line in text.splitlines() if line.strip()]


@app.command("link")
def link_cli(
    paths: List[Path] = typer.Argument(..., help="REFERENCE CITANCES, or with --evaluate: topic roots/dirs"),
    evaluate: bool = typer.Option(False, "--evaluate", help="Task 1a P/R/F1 over CL-SciSumm topics"),
    topics: Optional[str] = typer.Option(None, help="--evaluate: comma-separated topic ids (or a file of ids)"),
    model: Optional[Path] = typer.Option(None, help="Saved spaCy pipeline with a rhetoric_citance_linker"),
    encoder: Optional[str] = typer.Option(None, help="Encoder dir or HF name (default: the config's MiniLM)"),
    vectors: Optional[Path] = typer.Option(None, help="Word vectors for WMD (gensim .kv, word2vec .bin/.txt)"),
    wce: bool = typer.Option(True, "--wce/--no-wce", help="Weighted contextual embeddings (shared n-grams)"),
    denoise: bool = typer.Option(True, "--denoise/--no-denoise", help="Common component removal"),
    wmd: bool = typer.Option(True, "--wmd/--no-wmd", help="Add -WMD (non-contextual similarity)"),
    preprocess_text: bool = typer.Option(True, "--preprocess/--no-preprocess",
                                         help="Encode pre-processed text (as link-train does) or raw text"),
    k: int = typer.Option(3, "-k", help="Sentences returned per citance"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="JSON(L) output file (default stdout)"),
    threads: int = typer.Option(1, help="torch threads (0 = torch default)"),
) -> None:
    """Rank reference-paper sentences for citing sentences (CitRet).

    REFERENCE is a CL-SciSumm reference XML or a text file with one sentence
    per line (sid = line number); CITANCES is a CL-SciSumm annotation file or
    a text file with one citing sentence per line ('-' = stdin). With
    --evaluate, PATHS are topic directories or roots holding them; each
    topic's annotation files are merged per citance (union of the
    annotators' reference offsets) and P/R/F1 are micro-averaged."""
    _threads(threads)
    nlp, linker = build_linker(model, encoder, vectors, wce, denoise, wmd, k, preprocess_text)
    if evaluate:
        from ..citret.corpus import evaluate_topics, select_topics

        chosen = select_topics(paths, include=_split_ids(topics))
        if not chosen:
            msg.fail("no topics selected", exits=1)
        result = evaluate_topics(linker, nlp, chosen, k=k)
        result["settings"] = linker.settings.to_dict()
        result["encoder"] = encoder or (str(model) if model else linker.cfg["model_name"])
        result["vectors"] = str(vectors) if vectors else linker.cfg.get("vectors_path")
        msg.table(
            [(result["citances"], f"{result['precision']:.4f}", f"{result['recall']:.4f}", f"{result['f1']:.4f}",
              f"{result['seconds_per_citance']:.3f}")],
            header=("citances", "P", "R", "F1", "s/citance"),
        )
        if result["skipped"]:
            msg.warn(f"skipped: {result['skipped']}")
        text = json.dumps(result, indent=2)
        if output:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(text + "\n", encoding="utf8")
            msg.good(f"Wrote {output}")
        return
    if len(paths) != 2:
        msg.fail("expected REFERENCE CITANCES (or --evaluate with topic directories)", exits=1)
    reference = _read_reference(nlp, paths[0])
    lines = []
    for text, extra in _read_citances(paths[1]):
        links = linker.link(text, reference, k=k)
        lines.append(json.dumps({"citance": text, **extra, "links": links}))
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text("\n".join(lines) + "\n", encoding="utf8")
        msg.good(f"Wrote {len(lines)} citances to {output}")
    else:
        print("\n".join(lines))


@app.command("link-train")
def link_train_cli(
    roots: List[Path] = typer.Argument(..., help="CL-SciSumm topic roots/dirs to train on"),
    output: Path = typer.Option(..., "--output", "-o", help="Directory for the fine-tuned encoder"),
    base_model: str = typer.Option("sentence-transformers/all-MiniLM-L6-v2", help="Encoder to start from"),
    exclude_topics: Optional[str] = typer.Option(None, help="Comma-separated topic ids (or file) to leave out"),
    topics: Optional[str] = typer.Option(None, help="Only these topic ids (comma-separated or file)"),
    epochs: int = typer.Option(1),
    max_steps: Optional[int] = typer.Option(None, help="Stop after this many optimizer steps (0 = no limit)"),
    max_pairs: Optional[int] = typer.Option(None, help="Train on a seeded random subset of this many pairs"),
    batch_size: int = typer.Option(16),
    learning_rate: float = typer.Option(2e-5),
    max_length: int = typer.Option(128),
    seed: int = typer.Option(0),
    checkpoint_every: int = typer.Option(200),
    no_preprocess: bool = typer.Option(False, "--no-preprocess", help="Encode raw text (linker preprocess_for_encoder=false)"),
    threads: int = typer.Option(1, help="torch threads (0 = torch default)"),
) -> None:
    """Fine-tune the CitRet encoder with the cosine-similarity pair loss on
    pairs built per citance (cited 1.0, same paper 0.3, other paper 0.0).
    Checkpoints go to OUTPUT/checkpoint; re-running the same command resumes."""
    import random
    import time

    from ..citret.corpus import select_topics, training_pairs
    from ..citret.encoder import SentenceEncoder, finetune
    from ..citret.text import preprocess

    _threads(threads)
    chosen = select_topics(roots, include=_split_ids(topics), exclude=_split_ids(exclude_topics))
    msg.info(f"{len(chosen)} topics ({sum(t.auto for t in chosen)} automatic)")
    pairs, stats, counts = training_pairs(chosen, seed=seed)
    msg.info(stats.summary())
    if counts:
        msg.warn(f"reader: {dict(counts)}")
    n_all = len(pairs)
    if max_pairs is not None and max_pairs < len(pairs):
        pairs = random.Random(seed).sample(pairs, max_pairs)
    if not no_preprocess:
        pairs = [(" ".join(preprocess(a)) or a, " ".join(preprocess(b)) or b, s) for a, b, s in pairs]
    encoder = SentenceEncoder(base_model, max_length=max_length)
    start = time.perf_counter()
    if max_steps is not None and max_steps <= 0:
        max_steps = None
    result = finetune(encoder, pairs, epochs=epochs, max_steps=max_steps, batch_size=batch_size,
                      learning_rate=learning_rate, seed=seed, checkpoint_dir=output / "checkpoint",
                      checkpoint_every=checkpoint_every)
    seconds = time.perf_counter() - start
    encoder.save(output / "encoder")
    info = {**result, "pairs_built": n_all, "pairs_used": len(pairs), "topics": len(chosen),
            "seconds_this_run": seconds, "base_model": base_model, "batch_size": batch_size,
            "learning_rate": learning_rate, "max_steps": max_steps, "epochs_requested": epochs,
            "preprocess_for_encoder": not no_preprocess, "pair_stats": stats.summary()}
    (output / "training.json").write_text(json.dumps(info, indent=2), encoding="utf8")
    msg.good(f"Saved encoder to {output / 'encoder'} ({int(result['steps'])} steps, {seconds:.0f}s)")


@app.command("link-word2vec")
def link_word2vec_cli(
    roots: List[Path] = typer.Argument(..., help="CL-SciSumm topic roots/dirs whose reference papers to train on"),
    output: Path = typer.Option(..., "--output", "-o", help="KeyedVectors file to write"),
    exclude_topics: Optional[str] = typer.Option(None, help="Comma-separated topic ids (or file) to leave out"),
    vector_size: int = typer.Option(100),
    window: int = typer.Option(5),
    min_count: int = typer.Option(2),
    epochs: int = typer.Option(5),
    seed: int = typer.Option(0),
    workers: int = typer.Option(1),
) -> None:
    """Train Word2Vec on the pre-processed full texts of the reference papers
    (the word vectors of CitRet's WMD) and save gensim KeyedVectors."""
    import time

    from ..citret.corpus import reference_token_sentences, select_topics
    from ..citret.wmd import train_word2vec

    chosen = select_topics(roots, exclude=_split_ids(exclude_topics))
    sentences = list(reference_token_sentences(chosen))
    start = time.perf_counter()
    kv = train_word2vec(sentences, vector_size=vector_size, window=window, min_count=min_count,
                        epochs=epochs, seed=seed, workers=workers)
    output.parent.mkdir(parents=True, exist_ok=True)
    kv.save(str(output))
    msg.good(f"{len(chosen)} papers, {len(sentences)} sentences -> {len(kv)} words x {kv.vector_size} "
             f"in {time.perf_counter() - start:.0f}s: {output}")
