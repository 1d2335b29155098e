"""Open-set analysis (SciToricsBERT §4.3): train the sentence encoder on a
random subset of the distant labels and measure retrieval on validation
sentences of the labels it saw and of the labels it never saw.

For every loss x number of training labels x seed:

1. sample ``n`` labels (``random.Random(seed)``; the subset depends only on
   the seed and ``n``, so every loss sees the same labels);
2. write the training sentences of those labels (and, for checkpoint
   selection, the validation sentences of those labels) to temporary
   ``.spacy`` files;
3. ``spacy train`` the encoder config with the loss swapped in; the number of
   epochs scales inversely with the number of training labels
   (``max_epochs = round(epochs * n_all / n)``, paper footnote 9: about the
   same number of training samples for every ``n``), optionally capped by
   ``--max-steps``; the best checkpoint is chosen on the seen-label
   validation MAP@R;
4. encode the validation sentences and compute
   ``spacy_rhetoric.evaluation.metrics.retrieval_scores`` (P@1, MAP@R) on the SEEN
   labels, the UNSEEN labels and ALL labels (a query's neighbours are searched
   within the evaluated subset).

Results are appended to ``<out>/results.jsonl`` as each run finishes (a rerun
skips finished runs), summarised in ``<out>/summary.json`` (mean and std over
seeds) and plotted to ``<out>/open_set.png``: P@1 and MAP@R against the number
of training labels, one colour per loss, solid = unseen labels, dashed = all.

    python benchmarks/encoder/open_set.py --train corpus/distant/train.spacy --valid corpus/distant/valid.spacy \
        --config configs/encoder.cfg --losses SoftmaxLoss,BatchAllTripletLoss,ArcFaceLoss,MultiSimilarityLoss,NTXentLoss \
        --label-counts 10,20,40 --seeds 0,1,2,3,4 --epochs 2 --out benchmarks/out/open_set

A label count at or above the number of distant labels uses every label
(no unseen labels remain; only the seen/all scores exist for it).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from spacy_rhetoric.evaluation.open_set import (
    epochs_for,
    loss_name,
    run_key,
    sample_labels,
    short_loss,
    subset_scores,
    summarise,
)


def doc_label(doc) -> Optional[str]:
    from spacy_rhetoric.extensions import labelled_spans

    spans = labelled_spans(doc)
    labels = {label for _, _, label in spans}
    return labels.pop() if len(labels) == 1 else None


def read_docs(path: Path, vocab, limit: int = 0) -> Tuple[List[Any], List[str], int]:
    """Docs with exactly one label (one distant sentence each) and their
    labels; the count of docs skipped (no label or several labels)."""
    from spacy.tokens import DocBin

    docs, labels, skipped = [], [], 0
    for doc in DocBin(store_user_data=True).from_disk(path).get_docs(vocab):
        label = doc_label(doc)
        if label is None:
            skipped += 1
            continue
        docs.append(doc)
        labels.append(label)
        if limit and len(docs) >= limit:
            break
    return docs, labels, skipped


def write_subset(docs, labels, keep: set, path: Path) -> int:
    from spacy.tokens import DocBin

    db = DocBin(store_user_data=True)
    n = 0
    for doc, label in zip(docs, labels):
        if label in keep:
            db.add(doc)
            n += 1
    db.to_disk(path)
    return n


def train_encoder(config: Path, train_path: Path, dev_path: Path, out_dir: Path, *, loss: str,
                  max_epochs: int, max_steps: int, eval_frequency: int, p: int, k: int, seed: int,
                  gpu_id: int = -1, checkpoint: str = "best") -> Path:
    """``spacy train`` in-process; returns the model-best (or model-last) directory."""
    from spacy.cli.train import train as spacy_train

    overrides = {
        "paths.train": str(train_path),
        "paths.dev": str(dev_path),
        "components.rhetoric_sentence_encoder.loss": {"@misc": loss},
        "training.max_epochs": max_epochs,
        "training.max_steps": max_steps,
        "training.eval_frequency": eval_frequency,
        "training.patience": 0,
        "training.batcher.p": p,
        "training.batcher.k": k,
        "system.seed": seed,
        "training.score_weights.encoder_p_at_1": 0.0,
        "training.score_weights.encoder_map_at_r": 1.0,
    }
    spacy_train(config, out_dir, use_gpu=gpu_id, overrides=overrides)
    best = out_dir / "model-best"
    return best if checkpoint == "best" and best.exists() else out_dir / "model-last"


def plot(summary: Dict[str, Any], path: Path, *, baseline: Optional[Dict[str, Dict[str, float]]] = None,
         title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_loss = defaultdict(list)
    for entry in summary.values():
        by_loss[entry["loss"]].append(entry)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, metric, name in zip(axes, ("p_at_1", "map_at_r"), ("P@1", "MAP@R")):
        for i, (loss, entries) in enumerate(sorted(by_loss.items())):
            entries = sorted(entries, key=lambda e: e["n_train_labels"])
            colour = colours[i % len(colours)]
            for part, style in (("unseen", "-"), ("all", "--")):
                pts = [(e["n_train_labels"], e[f"{part}_{metric}"], e[f"{part}_{metric}_std"])
                       for e in entries if f"{part}_{metric}" in e]
                if not pts:
                    continue
                xs, ys, err = zip(*pts)
                ax.errorbar(xs, ys, yerr=err, linestyle=style, marker="o", color=colour, capsize=3,
                            label=f"{loss} ({part} labels)")
        if baseline:
            for part, style in (("unseen", ":"), ("all", "-.")):
                if part in baseline and baseline[part]:
                    ax.axhline(baseline[part][metric], color="grey", linestyle=style,
                               label=f"raw MiniLM ({part}, largest n)")
        ax.set_xlabel("number of training labels")
        ax.set_ylabel(name)
        ax.set_title(f"{name} on validation sentences")
        xs_all = sorted({e["n_train_labels"] for e in summary.values()})
        ax.set_xticks(xs_all)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=Path, default=Path("corpus/distant/train.spacy"))
    ap.add_argument("--valid", type=Path, default=Path("corpus/distant/valid.spacy"))
    ap.add_argument("--config", type=Path, default=Path("configs/encoder.cfg"))
    ap.add_argument("--losses", default="SoftmaxLoss,BatchAllTripletLoss,ArcFaceLoss,MultiSimilarityLoss,NTXentLoss")
    ap.add_argument("--label-counts", default="10,20,40")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--epochs", type=float, default=2.0, help="Epochs when training on ALL labels; scaled by n_all/n")
    ap.add_argument("--max-steps", type=int, default=0, help="Cap on steps per run (0 = epochs only)")
    ap.add_argument("--eval-frequency", type=int, default=200)
    ap.add_argument("--p", type=int, default=8, help="Labels per PK batch (capped at the training labels)")
    ap.add_argument("--k", type=int, default=8, help="Examples per label in a PK batch")
    ap.add_argument("--train-limit", type=int, default=0, help="Use only the first N training sentences (0 = all)")
    ap.add_argument("--valid-limit", type=int, default=0, help="Use only the first N validation sentences (0 = all)")
    ap.add_argument("--min-label-count", type=int, default=2,
                    help="Labels with fewer training sentences are not sampled")
    ap.add_argument("--baseline", action="store_true", help="Also score raw MiniLM on the same validation sentences")
    ap.add_argument("--checkpoint", choices=("best", "last"), default="best",
                    help="Evaluate model-best (seen-label validation MAP@R, may be the untrained step 0) or model-last")
    ap.add_argument("--gpu-id", type=int, default=-1)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0 = torch default)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/open_set"))
    ap.add_argument("--plot", type=Path, default=None, help="PNG path (default <out>/open_set.png)")
    ap.add_argument("--keep-models", action="store_true", help="Keep each run's model-best under <out>/models")
    ap.add_argument("--plot-only", action="store_true", help="Only re-plot from <out>/results.jsonl")
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import spacy
    import srsly
    import torch

    import spacy_rhetoric  # noqa: F401 - factories, readers, batchers, losses
    from spacy_rhetoric.evaluation.metrics import raw_transformer_vectors, sentence_vectors

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.jsonl"
    plot_path = args.plot or args.out / "open_set.png"
    results = list(srsly.read_jsonl(results_path)) if results_path.exists() else []
    done = {r["key"] for r in results}

    losses = [loss_name(x.strip()) for x in args.losses.split(",") if x.strip()]
    counts = [int(x) for x in args.label_counts.split(",") if x.strip()]
    seeds = [int(x) for x in args.seeds.split(",") if x.strip()]

    baseline = None
    if not args.plot_only:
        vocab = spacy.blank("en").vocab
        train_docs, train_labels, skipped_train = read_docs(args.train, vocab, args.train_limit)
        valid_docs, valid_labels, skipped_valid = read_docs(args.valid, vocab, args.valid_limit)
        train_counts = Counter(train_labels)
        all_labels = sorted(l for l, c in train_counts.items() if c >= args.min_label_count)
        print(f"[open_set] {len(train_docs)} training sentences ({skipped_train} skipped), "
              f"{len(valid_docs)} validation sentences ({skipped_valid} skipped), "
              f"{len(all_labels)} labels with >= {args.min_label_count} training sentences", flush=True)
        if len(all_labels) < 2:
            print("[open_set] fewer than 2 usable labels", file=sys.stderr)
            return 1
        plan = []
        for n in counts:
            n_eff = min(n, len(all_labels))
            if n_eff != n:
                print(f"[open_set] {n} labels requested, only {len(all_labels)} exist: using all", flush=True)
            for seed in seeds:
                for loss in losses:
                    plan.append((loss, n, n_eff, seed))
        if args.baseline:
            largest = max(min(n, len(all_labels)) for n in counts)
            keep = set(sample_labels(all_labels, largest, seeds[0]))
            raw = raw_transformer_vectors([d.text for d in valid_docs])
            baseline = {
                "unseen": subset_scores(raw, valid_labels, set(valid_labels) - keep),
                "all": subset_scores(raw, valid_labels, set(valid_labels)),
            }
            srsly.write_json(args.out / "baseline.json", baseline)
        for i, (loss, n, n_eff, seed) in enumerate(plan, start=1):
            key = run_key(loss, n, seed)
            if key in done:
                print(f"[open_set] {i}/{len(plan)} {key}: done earlier, skipped", flush=True)
                continue
            seen = set(sample_labels(all_labels, n_eff, seed))
            unseen = set(valid_labels) - seen
            max_epochs = epochs_for(n_eff, len(all_labels), args.epochs)
            t0 = time.time()
            with tempfile.TemporaryDirectory(prefix="open_set_") as tmp:
                tmp = Path(tmp)
                n_train = write_subset(train_docs, train_labels, seen, tmp / "train.spacy")
                n_dev = write_subset(valid_docs, valid_labels, seen, tmp / "dev.spacy")
                print(f"[open_set] {i}/{len(plan)} {key}: {n_train} train / {n_dev} dev sentences, "
                      f"{max_epochs} epochs" + (f" (max {args.max_steps} steps)" if args.max_steps else ""),
                      flush=True)
                model = train_encoder(
                    args.config, tmp / "train.spacy", tmp / "dev.spacy", tmp / "model", loss=loss,
                    max_epochs=max_epochs, max_steps=args.max_steps, eval_frequency=args.eval_frequency,
                    p=min(args.p, n_eff), k=args.k, seed=seed, gpu_id=args.gpu_id,
                    checkpoint=args.checkpoint,
                )
                nlp = spacy.load(model)
                vectors, labels = sentence_vectors(nlp, valid_docs, progress=False)
                if args.keep_models:
                    dest = args.out / "models" / key.replace("|", "_")
                    shutil.rmtree(dest, ignore_errors=True)
                    shutil.copytree(model, dest)
            row = {
                "key": key, "loss": short_loss(loss), "n_train_labels": n_eff, "n_requested": n, "seed": seed,
                "train_labels": sorted(seen), "n_train_sentences": n_train, "max_epochs": max_epochs,
                "max_steps": args.max_steps, "config": str(args.config), "checkpoint": args.checkpoint,
                "seen": subset_scores(vectors, labels, seen),
                "unseen": subset_scores(vectors, labels, unseen),
                "all": subset_scores(vectors, labels, set(labels)),
                "seconds": round(time.time() - t0, 1),
            }
            with results_path.open("a", encoding="utf8") as fileh:
                fileh.write(json.dumps(row) + "\n")
            results.append(row)
            print(f"[open_set] {key}: " + ", ".join(
                f"{part} P@1 {row[part]['p_at_1']:.3f} MAP@R {row[part]['map_at_r']:.3f}"
                for part in ("seen", "unseen", "all") if row[part]) + f" ({row['seconds']} s)", flush=True)
    elif (args.out / "baseline.json").exists():
        baseline = srsly.read_json(args.out / "baseline.json")

    if not results:
        print("[open_set] no results to summarise", file=sys.stderr)
        return 1
    summary = summarise(results)
    srsly.write_json(args.out / "summary.json", summary)
    plot(summary, plot_path, baseline=baseline,
         title=f"open-set retrieval, encoder {results[-1]['config']} (mean ± std over seeds)")
    print(f"[open_set] summary -> {args.out / 'summary.json'}, plot -> {plot_path}")
    for entry in summary.values():
        print("  " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in entry.items()
                              if not k.endswith("_std")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
