"""``spacy-rhetoric map CORPUS... -o map.png [--model PIPELINE]``: a 2-d t-SNE
(scikit-learn, ``evaluation.metrics.tsne_plot``) of sentence vectors coloured by
function label.

CORPUS: an index written by ``spacy-rhetoric index`` (vectors and labels
read from it), ``.spacy`` files whose sentences carry encoder vectors, or,
with ``--model``, any corpus ``spacy-rhetoric index`` reads (``.spacy``, label
``.jsonl``, papers), encoded by the pipeline. At most ``--max-points``
sentences are drawn, chosen with ``--seed``: papers are taken in a seeded
random order until there are enough sentences (so a large corpus is not
encoded whole), then that many sentences are sampled with the same seed.
"""
import random
from pathlib import Path
from typing import List, Optional, Tuple

import numpy
import typer
from wasabi import msg

from ..errors import RhetoricError
from . import app
from .common import guard, nothing_done, positive_int, printable


def index_vectors(path: Path, max_points: int, seed: int) -> Tuple[numpy.ndarray, List[str], int]:
    from ..search import RhetoricIndex

    index = RhetoricIndex.load(path)
    n = len(index)
    ids = numpy.arange(n) if n <= max_points else \
        numpy.sort(numpy.random.default_rng(seed).choice(n, max_points, replace=False))
    vectors = index.index.reconstruct_batch(ids)
    labels = [index.record(int(i)).label for i in ids]
    return vectors, labels, n


def corpus_vectors(corpus: List[Path], model: Optional[str], max_points: int, seed: int
                   ) -> Tuple[numpy.ndarray, List[Optional[str]], int]:
    import spacy
    from spacy.tokens import DocBin
    from tqdm import tqdm

    from ..extensions import docbin_docs
    from ..readers.common import ReadStats
    from ..search import corpus_files, encode_papers, iter_corpus, load_pipeline, sentence_rows

    blocks, labels = [], []
    if model is None:
        files = corpus_files(corpus)
        bad = [f for f in files if f.suffix.lower() != ".spacy"]
        if bad:
            raise RhetoricError(f"{bad[0]} is not a .spacy file with vectors: pass --model PIPELINE to encode it")
        vocab = spacy.blank("en").vocab
        total = 0
        for path in files:
            try:
                docs = list(docbin_docs(DocBin(store_user_data=True).from_disk(path), vocab))
            except Exception as err:  # noqa: BLE001 - name the file
                raise RhetoricError(f"{path}: cannot read as a .spacy DocBin: {err}") from err
            for doc in docs:
                if len(doc):
                    X, rows = sentence_rows(doc)
                    total += sum(1 for s in doc.sents if s.text.strip()) if doc.has_annotation("SENT_START") else 1
                    if rows:
                        blocks.append(X)
                        labels.extend(r["label"] for r in rows)
        if not labels:
            raise RhetoricError(f"no sentence in {', '.join(map(str, corpus))} has an encoder vector: "
                             "pass --model PIPELINE to encode the corpus")
        return numpy.vstack(blocks), labels, total
    nlp = load_pipeline(model)
    stats = ReadStats(name="corpus files")
    papers = list(iter_corpus(corpus, nlp, stats))
    if stats.skipped:
        msg.warn(f"{stats.skipped} input record(s) skipped", "\n".join(printable(e) for e in stats.examples))
    total = sum(len(p["sentences"]) for p in papers)
    random.Random(seed).shuffle(papers)
    chosen, size = [], 0
    for paper in papers:
        if size >= max_points:
            break
        chosen.append(paper)
        size += len(paper["sentences"])
    for start in tqdm(range(0, len(chosen), 16), desc="encode", unit="batch", disable=None):
        X, rows = encode_papers(nlp, chosen[start:start + 16])
        if rows:
            blocks.append(X)
            labels.extend(r["label"] for r in rows)
    if not labels:
        raise RhetoricError("no sentence of the corpus got a vector")
    return numpy.vstack(blocks), labels, total


@app.command("map")
def map_cli(
    corpus: List[Path] = typer.Argument(..., help="Index dir, .spacy with vectors, or (with --model) any corpus"),
    output: Path = typer.Option(..., "--output", "-o", help="PNG file to write"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Pipeline that encodes the corpus"),
    max_points: int = typer.Option(5000, "--max-points", callback=positive_int, help="Sentences drawn at most"),
    seed: int = typer.Option(0, "--seed", help="Seed of the subsample and of t-SNE"),
    title: Optional[str] = typer.Option(None, "--title", help="Plot title"),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file that does not look like one this command writes"),
) -> None:
    """2-d t-SNE map of sentence vectors coloured by label."""
    from ..evaluation.metrics import tsne_plot
    from ..io import check_input, check_outputs, prepare_outputs
    from ..search import CONFIG_FILE

    with guard("map"):
        for path in corpus:
            check_input(path, what="corpus", dir_ok=True)
        if output.suffix.lower() != ".png":
            raise RhetoricError(f"output {output} must be a .png file")
        check_outputs({"output": output}, inputs=list(corpus) + ([Path(model)] if model and Path(model).exists() else []), kinds={"output": "png"}, force=force)
        prepare_outputs({"output": output})
        if len(corpus) == 1 and (corpus[0] / CONFIG_FILE).is_file():
            vectors, labels, total = index_vectors(corpus[0], max_points, seed)
        else:
            vectors, labels, total = corpus_vectors(corpus, model, max_points, seed)
        labels = [label or "unlabelled" for label in labels]
        if len(labels) < 3:
            nothing_done(f"t-SNE needs at least 3 sentence vectors, the corpus gave {len(labels)}")
        shown = min(len(labels), max_points)
        tsne_plot(vectors, labels, output, seed=seed, max_points=max_points,
                  title=title or f"t-SNE of {shown} of {total} sentences (seed {seed})")
    msg.good(f"{shown} of {total} sentences mapped -> {output}")
