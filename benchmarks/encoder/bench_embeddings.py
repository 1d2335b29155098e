"""Sentence-embedding benchmark: retrieval, downstream classifiers, clustering.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/encoder/bench_embeddings.py \
        --model raw-minilm --output benchmarks/encoder/results/embeddings_raw_minilm.json

``--model`` is the same spec as ``spacy-rhetoric evaluate``: ``raw-minilm``,
``raw:<hf name>`` or a trained pipeline directory (repeatable); the numbers
come from ``spacy_rhetoric.evaluation.models.evaluate_model``, so the command and
this script cannot disagree.

Datasets (``--datasets``, default both):

* ``csabstruct``: ``csabstruct/train.jsonl`` (downstream training) and
  ``csabstruct/dev.jsonl`` (retrieval, clustering, downstream test).
* ``pmc``: only the dev file of PMC-Sents-FULL is public, so it is split
  document-disjointly: the distinct PMC ids, sorted, are shuffled with
  ``numpy.random.default_rng(seed)`` and the first 80 % (rounded) of the
  articles go to train, the other 20 % to test; each article is one Doc with
  its sentences in file order. No article is on both sides.
"""
import argparse
import json
import os
import sys
import time
from collections import OrderedDict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = Path(os.environ.get("SPACY_RHETORIC_DATA", REPO.parent / "shared" / "data"))


def _doc_builder(nlp):
    try:
        from spacy_rhetoric.readers.common import doc_from_sentences
    except ImportError:  # the readers module is another helper's; keep a fallback
        from spacy.tokens import Doc

        from spacy_rhetoric.extensions import set_sent_labels

        def doc_from_sentences(nlp, sentences, *, labels=None, doc_id=None):
            words, spaces, starts = [], [], []
            for j, sent in enumerate(sentences):
                toks = nlp.make_doc(sent.strip())
                for k, t in enumerate(toks):
                    words.append(t.text)
                    spaces.append(bool(t.whitespace_))
                    starts.append(k == 0)
                spaces[-1] = j < len(sentences) - 1
            doc = Doc(nlp.vocab, words=words, spaces=spaces, sent_starts=starts)
            set_sent_labels(doc, labels)
            return doc

    return lambda sentences, labels, doc_id: doc_from_sentences(nlp, sentences, labels=labels, doc_id=doc_id)


def read_jsonl(path: Path):
    with path.open(encoding="utf8") as fileh:
        for i, line in enumerate(fileh, 1):
            if line.strip():
                try:
                    yield i, json.loads(line)
                except ValueError as err:
                    raise ValueError(f"{path}:{i}: invalid JSON: {err}") from err


def csabstruct_docs(path: Path, build, limit: int = 0):
    docs, skipped = [], 0
    for line, rec in read_jsonl(path):
        sents = [s.strip() for s in rec.get("sentences", [])]
        labels = rec.get("labels", [])
        if not sents or len(sents) != len(labels) or not all(sents):
            skipped += 1
            continue
        docs.append(build(sents, labels, f"{path.stem}:{line}"))
        if limit and len(docs) >= limit:
            break
    if skipped:
        print(f"{path}: skipped {skipped} malformed abstracts", file=sys.stderr)
    return docs


def pmc_split(path: Path, build, *, seed: int = 0, train_share: float = 0.8, limit: int = 0):
    """Document-disjoint train/test split of the PMC-Sents-FULL dev file."""
    articles = OrderedDict()
    skipped = 0
    for line, rec in read_jsonl(path):
        sent, label, pmc = (rec.get("sentence") or "").strip(), rec.get("label"), rec.get("id")
        if not sent or not label or not pmc:
            skipped += 1
            continue
        articles.setdefault(pmc, ([], []))
        articles[pmc][0].append(sent)
        articles[pmc][1].append(label)
    from spacy_rhetoric.readers.splits import split_doc_ids  # the split of `spacy-rhetoric split`

    train_ids, test_ids = split_doc_ids(list(articles), share=train_share, seed=seed)
    if limit:
        train_ids, test_ids = train_ids[:limit], test_ids[:limit]
    assert not set(train_ids) & set(test_ids)
    train = [build(*articles[i], i) for i in train_ids]
    test = [build(*articles[i], i) for i in test_ids]
    info = {"articles_train": len(train_ids), "articles_test": len(test_ids),
            "skipped_records": skipped, "split": f"seed {seed}, {train_share:.0%} of sorted PMC ids shuffled"}
    return train, test, info


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=None,
                        help="raw-minilm, raw:<hf name> or a pipeline path (repeatable)")
    parser.add_argument("--datasets", default="csabstruct,pmc")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=None, help="JSON results")
    parser.add_argument("--tsne-dir", type=Path, default=None, help="write t-SNE PNGs here")
    parser.add_argument("--limit", type=int, default=0, help="docs per split (0 = all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import spacy
    import torch

    import spacy_rhetoric  # noqa: F401
    from spacy_rhetoric.evaluation.models import evaluate_model, resolve_model_spec

    torch.set_num_threads(args.threads)
    specs = [resolve_model_spec(m) for m in (args.model or ["raw-minilm"])]
    build = _doc_builder(spacy.blank("en"))
    data = {}
    for name in args.datasets.split(","):
        if name == "csabstruct":
            root = args.data_dir / "csabstruct"
            data[name] = (csabstruct_docs(root / "train.jsonl", build, args.limit),
                          csabstruct_docs(root / "dev.jsonl", build, args.limit),
                          {"train": str(root / "train.jsonl"), "test": str(root / "dev.jsonl")})
        elif name == "pmc":
            data[name] = pmc_split(args.data_dir / "pmc-sents-full" / "dev.jsonl", build,
                                   seed=args.seed, limit=args.limit)
        else:
            parser.error(f"unknown dataset {name!r}")
    results = {"seed": args.seed, "limit": args.limit, "threads": args.threads, "runs": []}
    for dataset, (train_docs, test_docs, info) in data.items():
        for spec in specs:
            start = time.time()
            tsne = None
            if args.tsne_dir is not None:
                safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in spec)
                tsne = args.tsne_dir / f"tsne_{dataset}_{safe}.png"
            res = evaluate_model(spec, test_docs, train_docs, seed=args.seed, tsne=tsne)
            res.update(dataset=dataset, model=spec, info=info, seconds_total=round(time.time() - start, 1))
            results["runs"].append(res)
            print(json.dumps(res, indent=1, default=str), flush=True)
            if args.output:
                args.output.parent.mkdir(parents=True, exist_ok=True)
                args.output.write_text(json.dumps(results, indent=1, default=str))
    print()
    print("| dataset | model | sentences (test/train) | P@1 | MAP@R | KNN | SVM | RF | MLP | DT | ARI | AMI | Sil |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results["runs"]:
        ret, down, clu = r.get("retrieval", {}), r.get("downstream", {}), r.get("clustering", {})
        cells = [ret.get("p_at_1"), ret.get("map_at_r")] + [down.get(k) for k in ("knn", "svm", "rf", "mlp", "dt")] \
            + [clu.get(k) for k in ("ari", "ami", "silhouette")]
        print(f"| {r['dataset']} | {r['model']} | {r['n_sentences']}/{r.get('n_train_sentences', '-')} | "
              + " | ".join("-" if c is None else f"{c:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
