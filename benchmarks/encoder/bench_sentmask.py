"""SENT-MASK vs MiniLM initialisation of the shared transformer.

Fine-tunes ``configs/rhetoric_trf.cfg`` (classifier + encoder on
one shared transformer) twice with the same budget (``--steps`` updates of
``--batch-size`` docs, warm-up ``--warmup`` steps), once from
all-MiniLM-L6-v2 and once from a SENT-MASK model directory
(``spacy-rhetoric pretrain-sentmask``), then evaluates ``model-last`` of each
on the evaluation corpus with ``nlp.evaluate``: classifier F1-micro/macro,
encoder P@1 / MAP@R (leave-one-out retrieval over the labelled sentences).
spaCy's in-training dev evaluation only sees ``--train-dev-limit`` docs (it
does not select the model; model-last is reported).

    python benchmarks/encoder/bench_sentmask.py --sentmask training/sentmask_small/model \\
        --train corpus/csabstruct/train.spacy --eval corpus/csabstruct/dev.spacy \\
        --steps 30 --out training/bench_sentmask/csabstruct
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
KEYS = ("rhetoric_f_micro", "rhetoric_f_macro", "encoder_p_at_1", "encoder_map_at_r")


def finetune(init: str, args, out: Path) -> float:
    cmd = [
        sys.executable, "-m", "spacy", "train", str(REPO / "configs/rhetoric_trf.cfg"),
        "--output", str(out), "--paths.train", args.train, "--paths.dev", args.eval,
        "--components.transformer.model.name.name", init,
        "--training.max_steps", str(args.steps), "--training.eval_frequency", str(args.steps),
        "--training.optimizer.learn_rate.warmup_steps", str(args.warmup),
        "--training.batcher.size", str(args.batch_size),
        "--corpora.dev.limit", str(args.train_dev_limit), "--system.seed", str(args.seed),
    ]
    start = time.time()
    with open(out.with_suffix(".log"), "w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    return time.time() - start


def evaluate(model_dir: Path, corpus: str) -> dict:
    import spacy
    from spacy.training import Corpus

    nlp = spacy.load(model_dir)
    examples = list(Corpus(corpus)(nlp))
    scores = nlp.evaluate(examples)
    return {k: scores.get(k) for k in KEYS} | {"docs": len(examples)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentmask", required=True, help="SENT-MASK model directory")
    p.add_argument("--train", default="corpus/csabstruct/train.spacy")
    p.add_argument("--eval", default="corpus/csabstruct/dev.spacy")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--train-dev-limit", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="training/bench_sentmask/csabstruct")
    p.add_argument("--only", choices=["minilm", "sentmask"], default=None)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    out = REPO / args.out
    out.mkdir(parents=True, exist_ok=True)
    rows = {}
    for name, init in (("minilm", MINILM), ("sentmask", str(Path(args.sentmask).resolve()))):
        if args.only and name != args.only:
            continue
        run = out / name
        seconds = finetune(init, args, run)
        rows[name] = evaluate(run / "model-last", args.eval) | {"train_seconds": round(seconds, 1)}
        print(json.dumps({name: rows[name]}), flush=True)
        (out / f"{name}.json").write_text(json.dumps(rows[name], indent=2))
    print(json.dumps({"settings": vars(args), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
