"""``spacy-rhetoric link``, ``link-train``, ``link-word2vec``: CitRet cited
text span retrieval on CL-SciSumm (task 1a).

    # rank reference sentences for citing sentences
    spacy-rhetoric link REFERENCE CITANCES [--encoder DIR] [--vectors FILE] [-k 3]
    # task 1a P/R/F1 over topics (every annotator's file of a topic merged)
    spacy-rhetoric link --evaluate ROOT [ROOT ...] --topics C98-1097,D09-1023 ...
    # fine-tune the encoder / train Word2Vec
    spacy-rhetoric link-train ROOT [ROOT ...] --exclude-topics ... --output DIR
    spacy-rhetoric link-word2vec ROOT [ROOT ...] --output w2v.bin
"""
import json
import os
import re
import sys
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from ..citret.wmd import check_word2vec_header, load_vectors
from ..errors import RhetoricError
from ..io import PathError, atomic_write_json, atomic_write_lines, check_input, check_output
from ..util import torch_device
from . import app
from .common import GPU_ID_HELP, fail, guard, non_negative_int, nothing_done, positive_int, split_ids

ANN_RE = re.compile(r"citance\s+number\s*:", re.IGNORECASE)


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
    override the configuration. The encoder is loaded here, so that a bad
    encoder fails before any work. Raises ValueError / OSError."""
    import spacy

    if model is not None:
        nlp = spacy.load(model)
        names = [n for n, p in nlp.pipeline if p.__class__.__name__ == "CitanceLinker"]
        if not names:
            raise RhetoricError(f"{model} has no rhetoric_citance_linker component")
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
    if vectors is not None:
        linker.set_vectors(load_vectors(vectors), path=str(vectors))
    if use_wmd and linker.vectors is None:
        raise RhetoricError("WMD is on but no word vectors were given: use --vectors FILE (see link-word2vec) "
                         "or --no-wmd")
    if encoder is not None and model is not None:
        from ..citret.encoder import CitRetEncoder

        linker.set_encoder(CitRetEncoder(str(encoder), max_length=linker.cfg["max_length"]))
    _ = linker.encoder
    return nlp, linker


def _text(path: Path, what: str) -> str:
    """The text of a reference or citances file ('-' = stdin), the same
    checks for both and for papers (``readers.text.decode_text``: UTF-8, or
    UTF-16/32 with a byte-order mark, no NUL bytes); a ReaderError naming
    the file otherwise."""
    from ..readers.text import decode_text

    data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    return decode_text(data, f"{what} {path}")


def _read_reference(nlp, path: Path):
    from ..readers.clscisumm import read_reference_xml, reference_doc
    from ..readers.common import doc_from_sentences

    if path.suffix.lower() == ".xml":
        return reference_doc(nlp, read_reference_xml(path))
    lines = [line.strip() for line in _text(path, "reference file").splitlines()]
    sents = [line for line in lines if line]
    # plain text: one sentence per line, sid = line number (1-based, blank lines counted)
    sids = [str(i + 1) for i, line in enumerate(lines) if line]
    return doc_from_sentences(nlp, sents, sids=sids, doc_id=path.stem)


def _read_citances(path: Path):
    """``[(citance_text, extra_fields)]`` from an annotation file or text lines."""
    from ..citret.evaluation import merge_annotators
    from ..readers.clscisumm import read_annotations

    if str(path) != "-" and ".ann" in path.name:
        text = ""  # an annotation file: read_annotations decodes its mixed encodings
    else:
        text = _text(path, "citances file")
    first = next((line for line in text.splitlines() if line.strip()), "")
    if str(path) != "-" and (ANN_RE.search(first) or ".ann" in path.name):
        records, skipped = read_annotations(path)
        if skipped:
            msg.warn(f"{path}: {skipped} malformed annotation lines skipped")
        out = []
        for cit in merge_annotators(records):
            if cit.text:
                out.append((cit.text, {"citing_article": cit.citing_article,
                                       "citance_number": cit.citance_number,
                                       "gold": cit.gold_by_annotator}))
        return out
    return [(line.strip(), {}) for line in text.splitlines() if line.strip()]


def _check_link_paths(paths: List[Path], evaluate: bool, model: Optional[Path], vectors: Optional[Path],
                      output: Optional[Path], force: bool = False) -> None:
    """Every input exists with the right kind and ``output`` can be written
    (not an input), before anything is loaded. Raises PathError."""
    if evaluate:
        for path in paths:
            check_input(path, what="topic directory", file_ok=False, dir_ok=True)
    else:
        if len(paths) != 2:
            raise PathError(f"expected REFERENCE CITANCES (2 paths), got {len(paths)}; "
                            "or --evaluate with topic directories")
        check_input(paths[0], what="reference paper")
        if str(paths[1]) != "-":
            check_input(paths[1], what="citances file")
    if model is not None:
        check_input(model, what="--model pipeline", file_ok=False, dir_ok=True)
    if vectors is not None:
        check_input(vectors, what="--vectors file")
    if output is not None:
        inputs = [p for p in paths if str(p) != "-"] + [p for p in (vectors, model) if p is not None]
        check_output(output, what="--output", inputs=inputs, kind="json" if evaluate else "jsonl", force=force)


@app.command("link")
def link_cli(
    paths: List[Path] = typer.Argument(..., help="REFERENCE CITANCES, or with --evaluate: topic roots/dirs"),
    evaluate: bool = typer.Option(False, "--evaluate", help="Task 1a P/R/F1 over CL-SciSumm topics"),
    topics: Optional[str] = typer.Option(None, help="--evaluate: comma-separated topic ids (or a file of ids)"),
    model: Optional[Path] = typer.Option(None, help="Saved spaCy pipeline with a rhetoric_citance_linker"),
    encoder: Optional[str] = typer.Option(None, help="Encoder dir or HF name (default: the config's MiniLM)"),
    vectors: Optional[Path] = typer.Option(None, help="Word vectors for WMD (word2vec .bin or .txt/.vec)"),
    wce: bool = typer.Option(True, "--wce/--no-wce", help="Weighted contextual embeddings (shared n-grams)"),
    denoise: bool = typer.Option(True, "--denoise/--no-denoise", help="Common component removal"),
    wmd: bool = typer.Option(True, "--wmd/--no-wmd", help="Add -WMD (non-contextual similarity)"),
    preprocess_text: bool = typer.Option(True, "--preprocess/--no-preprocess",
                                         help="Encode pre-processed text (as link-train does) or raw text"),
    k: int = typer.Option(3, "-k", callback=positive_int, help="Sentences returned per citance (>= 1)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="JSON(L) output file (default stdout)"),
    threads: int = typer.Option(1, callback=non_negative_int, help="torch threads (0 = torch default)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help=GPU_ID_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file that does not look like one this command writes"),
) -> None:
    """Rank reference-paper sentences for citing sentences (CitRet).

    REFERENCE is a CL-SciSumm reference XML or a text file with one sentence
    per line (sid = line number); CITANCES is a CL-SciSumm annotation file or
    a text file with one citing sentence per line ('-' = stdin). With
    --evaluate, PATHS are topic directories or roots holding them; a citance
    is (topic, citing article, citance number) and is scored with two
    protocols: the union of the annotators' reference offsets (micro P/R/F1),
    and per annotator then averaged over annotators (the official CL-SciSumm
    task 1a protocol). The --output JSON lists every scored citance."""
    from tqdm import tqdm

    from ..citret.corpus import evaluate_topics
    from ..readers.clscisumm import select_topics

    with guard("link"):
        _check_link_paths(paths, evaluate, model, vectors, output, force)
        chosen = select_topics(paths, include=split_ids(topics)) if evaluate else None
        if evaluate and not chosen:
            nothing_done("no topics selected")
        if vectors is not None:
            check_word2vec_header(vectors)
        device = torch_device(gpu_id)
    _threads(threads)
    try:
        with guard("link"):
            nlp, linker = build_linker(model, encoder, vectors, wce, denoise, wmd, k, preprocess_text)
    except OSError as err:  # a pipeline or encoder directory that transformers / spaCy cannot read
        what = f"--model {model}" if model is not None and encoder is None else f"the encoder {encoder or ''}"
        fail(f"link: cannot load {what.strip()}: {str(err).splitlines()[0]}")
    linker.encoder.model.to(device)
    if evaluate:
        result = evaluate_topics(linker, nlp, chosen, k=k)
        result["settings"] = linker.settings.to_dict()
        result["encoder"] = encoder or (str(model) if model else linker.cfg["model_name"])
        result["vectors"] = str(vectors) if vectors else linker.cfg.get("vectors_path")
        counts = result["counts"]
        msg.info(f"{counts['records_read']} annotation records read ({counts['records_malformed']} malformed, "
                 f"{counts['records_unkeyed']} without citation text or offsets: not keyed), "
                 f"{counts['citances_read']} citances read, {counts['citances_scored']} scored, "
                 f"{counts['citances_skipped']} skipped" + (f" {result['skipped']}" if result["skipped"] else ""))
        union, per_ann = result["protocols"]["union"], result["protocols"]["per_annotator"]
        msg.table(
            [("union", union["citances"], f"{union['precision']:.4f}", f"{union['recall']:.4f}",
              f"{union['f1']:.4f}"),
             (f"per annotator (mean of {per_ann['annotators']})", union["citances"],
              f"{per_ann['precision']:.4f}", f"{per_ann['recall']:.4f}", f"{per_ann['f1']:.4f}")],
            header=("protocol", "citances", "P", "R", "F1"),
        )
        if result["seconds_per_citance"] is not None:
            msg.text(f"{result['seconds_per_citance']:.3f} s / citance")
        if output:
            atomic_write_json(output, result)
            msg.good(f"Wrote {output}")
        else:
            print(json.dumps(result, indent=2))
        if not counts["citances_scored"]:
            nothing_done("no citance with a citation text in the selected topics")
        return
    with guard("link"):
        reference = _read_reference(nlp, paths[0])
        citances = _read_citances(paths[1])
    if not len(reference) or not any(sent.text.strip() for sent in reference.sents):
        nothing_done(f"no sentence in the reference file {paths[0]}")
    if not citances:
        nothing_done(f"no citance in {paths[1]}")
    lines = []
    for text, extra in tqdm(citances, desc="linking citances", unit="citance"):
        links = linker.link(text, reference, k=k)
        lines.append({"citance": text, **extra, "links": links})
    if output:
        atomic_write_lines(output, lines)
        msg.good(f"Wrote {len(lines)} citances to {output}")
    else:
        print("\n".join(json.dumps(line) for line in lines))


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
    gpu_id: int = typer.Option(-1, "--gpu-id", help=GPU_ID_HELP),
) -> None:
    """Fine-tune the CitRet encoder with the cosine-similarity pair loss on
    pairs built per citance (cited 1.0, same paper 0.3, other paper 0.0).
    Checkpoints go to OUTPUT/checkpoint; re-running the same command resumes."""
    import random
    import time

    from ..citret.corpus import training_pairs
    from ..citret.encoder import CitRetEncoder, finetune
    from ..citret.scoring import encoder_pairs
    from ..readers.clscisumm import select_topics

    with guard("link-train"):
        for root in roots:
            check_input(root, what="topic directory", file_ok=False, dir_ok=True)
        check_output(output, what="--output", inputs=roots, dir_ok=True)
        chosen = select_topics(roots, include=split_ids(topics), exclude=split_ids(exclude_topics))
        device = torch_device(gpu_id)
    if not chosen:
        nothing_done("no topics selected")
    _threads(threads)
    msg.info(f"{len(chosen)} topics ({sum(t.auto for t in chosen)} automatic)")
    pairs, stats, counts = training_pairs(chosen, seed=seed)
    msg.info(stats.summary())
    if counts:
        msg.warn(f"reader: {dict(counts)}")
    n_all = len(pairs)
    if max_pairs is not None and max_pairs < len(pairs):
        pairs = random.Random(seed).sample(pairs, max_pairs)
    if not pairs:
        nothing_done("no training pairs (no citance with a citation text and a gold sentence)")
    pairs = encoder_pairs(pairs, not no_preprocess)
    encoder = CitRetEncoder(base_model, max_length=max_length, device=device)
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
    atomic_write_json(output / "training.json", info)
    msg.good(f"Saved encoder to {output / 'encoder'} ({int(result['steps'])} steps, {seconds:.0f}s)")


@app.command("link-word2vec")
def link_word2vec_cli(
    roots: List[Path] = typer.Argument(..., help="CL-SciSumm topic roots/dirs whose reference papers to train on"),
    output: Path = typer.Option(..., "--output", "-o",
                                help="Vectors file to write: word2vec text for .txt/.vec, else word2vec binary"),
    exclude_topics: Optional[str] = typer.Option(None, help="Comma-separated topic ids (or file) to leave out"),
    vector_size: int = typer.Option(100),
    window: int = typer.Option(5),
    min_count: int = typer.Option(2),
    epochs: int = typer.Option(5),
    seed: int = typer.Option(0),
    workers: int = typer.Option(1),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file that does not look like one this command writes"),
) -> None:
    """Train Word2Vec on the pre-processed full texts of the reference papers
    (the word vectors of CitRet's WMD) and save them in word2vec format."""
    import time

    from ..citret.corpus import reference_token_sentences
    from ..citret.wmd import save_vectors, train_word2vec
    from ..readers.clscisumm import select_topics

    with guard("link-word2vec"):
        for root in roots:
            check_input(root, what="topic directory", file_ok=False, dir_ok=True)
        check_output(output, what="--output", inputs=roots, kind="word2vec", force=force)
        chosen = select_topics(roots, exclude=split_ids(exclude_topics))
    if not chosen:
        nothing_done("no topics selected")
    sentences = list(reference_token_sentences(chosen))
    start = time.perf_counter()
    with guard("link-word2vec"):
        kv = train_word2vec(sentences, vector_size=vector_size, window=window, min_count=min_count,
                            epochs=epochs, seed=seed, workers=workers)
        save_vectors(kv, output)
    msg.good(f"{len(chosen)} papers, {len(sentences)} sentences -> {len(kv)} words x {kv.vector_size} "
             f"in {time.perf_counter() - start:.0f}s: {output}")
