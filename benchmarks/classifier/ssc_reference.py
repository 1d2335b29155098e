"""Reference run outside spaCy: how far does all-MiniLM-L6-v2 get on CSAbstruct
when it reads each abstract whole?

Why: the targets set for the classifier and encoder (F1-micro >= 0.80; P@1 >= 0.75,
MAP@R >= 0.45 on CSAbstruct dev) come from SciBERT-size models. This script fits
the strongest simple recipe we know for MiniLM-L6 in plain PyTorch, with no spaCy
windows in the way, to bound what the spaCy components can reach with these
weights on this data:

- input (Cohan et al. 2019 style): ``[CLS] s1 [SEP] s2 [SEP] ... sn [SEP]``,
  one abstract per row, truncated at ``--max-len`` word pieces (512 = MiniLM's
  position limit), so every sentence attends to all the others;
- a sentence vector = mean of its word-piece vectors (``--pool mean``) or its
  closing [SEP] vector (``--pool sep``);
- ``--context lstm``: a BiLSTM (2 x 128) over the abstract's sentence vectors,
  plus (relative position, is-first, is-last); ``--context none``: nothing;
- a linear softmax layer; cross-entropy; AdamW (encoder ``--lr``, head 1e-3),
  weight decay 0.01, linear warm-up over 10 % of the steps then linear decay,
  gradient clipping at 1.0, ``--batch-size`` abstracts per step.

After every epoch: dev F1-micro/macro of the argmax (sklearn), and retrieval
(P@1, MAP@R with ``spacy_rhetoric.evaluation.metrics.retrieval_scores``, i.e. the
project's protocol) on the input vectors of the softmax layer, which is what a
context encoder trained with the softmax CE loss would store, and on the
logits; ``nn_same_abstract`` = share of dev sentences whose nearest neighbour
(input vectors) is a sentence of the same abstract. Dev = the 295
CSAbstruct dev abstracts (2,026 sentences); the test split is not used.

    HF_HUB_OFFLINE=1 python benchmarks/classifier/ssc_reference.py --epochs 4 \
        --out benchmarks/classifier/results/ssc_reference_lstm.json
"""
import argparse
import json
import random
import time
from pathlib import Path

import numpy
import torch
from sklearn.metrics import f1_score

from spacy_rhetoric.evaluation.metrics import retrieval_scores
from spacy_rhetoric.evaluation.neighbours import cosine_neighbours
from spacy_rhetoric.util import resolve_hf_model

LABELS = ["background", "objective", "method", "result", "other"]


def read_abstracts(path):
    with open(path, encoding="utf8") as f:
        return [json.loads(line) for line in f if line.strip()]


def encode(tokenizer, abstract, max_len):
    """Word-piece ids of the joined abstract and, per piece, the sentence it
    belongs to (i for a word piece of sentence i, -2 - i for its [SEP], -1 for
    [CLS])."""
    ids, owner = [tokenizer.cls_token_id], [-1]
    for i, sentence in enumerate(abstract["sentences"]):
        pieces = tokenizer(sentence, add_special_tokens=False)["input_ids"]
        ids += pieces + [tokenizer.sep_token_id]
        owner += [i] * len(pieces) + [-2 - i]
    return ids[:max_len], owner[:max_len]


class WholeAbstractTagger(torch.nn.Module):
    def __init__(self, path, context, pool, n_labels):
        super().__init__()
        from transformers import AutoModel

        self.encoder = AutoModel.from_pretrained(path)
        hidden = self.encoder.config.hidden_size
        self.context, self.pool = context, pool
        self.dropout = torch.nn.Dropout(0.1)
        if context == "lstm":
            self.lstm = torch.nn.LSTM(hidden, 128, batch_first=True, bidirectional=True)
            width = 256 + 3
        else:
            width = hidden
        self.output = torch.nn.Linear(width, n_labels)

    def features(self, batch):
        longest = max(len(ids) for ids, _, _ in batch)
        input_ids = torch.zeros(len(batch), longest, dtype=torch.long)
        mask = torch.zeros_like(input_ids)
        for row, (ids, _, _) in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            mask[row, : len(ids)] = 1
        hidden = self.encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state
        out = []
        for row, (ids, owner, n) in enumerate(batch):
            owner = torch.tensor(owner)
            vectors = []
            for i in range(n):
                select = owner == (-2 - i if self.pool == "sep" else i)
                # a sentence cut off by truncation falls back to [CLS]
                vectors.append(hidden[row, : len(owner)][select].mean(0) if select.any() else hidden[row, 0])
            V = torch.stack(vectors)
            if self.context == "lstm":
                V, _ = self.lstm(self.dropout(V)[None])
                pos = torch.tensor(
                    [[i / max(n - 1, 1), float(i == 0), float(i == n - 1)] for i in range(n)]
                )
                V = torch.cat([V[0], pos], 1)
            out.append(V)
        return torch.cat(out)

    def forward(self, batch):
        return self.output(self.dropout(self.features(batch)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default="../shared/data/csabstruct/train.jsonl")
    ap.add_argument("--dev", default="../shared/data/csabstruct/dev.jsonl")
    ap.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    ap.add_argument("--context", choices=["lstm", "none"], default="lstm")
    ap.add_argument("--pool", choices=["mean", "sep"], default="mean")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--max-len", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--features-out", type=Path, default=None,
                    help="save the dev sentence features and logits of every epoch here (.npy)")
    args = ap.parse_args()

    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    path = resolve_hf_model(args.model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    train, dev = read_abstracts(args.train), read_abstracts(args.dev)
    for name, data in (("train", train), ("dev", dev)):
        bad = [i for i, ab in enumerate(data) if len(ab["sentences"]) != len(ab["labels"])
               or any(label not in LABELS for label in ab["labels"])]
        if bad:
            raise SystemExit(f"{name}: abstracts (0-based lines) with unknown labels or length mismatch: {bad[:10]}")

    def prepare(data):
        return [(*encode(tokenizer, ab, args.max_len), len(ab["sentences"])) for ab in data]

    train_x = list(zip(prepare(train), [[LABELS.index(l) for l in ab["labels"]] for ab in train]))
    dev_x = prepare(dev)
    dev_y = [label for ab in dev for label in ab["labels"]]
    dev_abstract = numpy.asarray([i for i, ab in enumerate(dev) for _ in ab["labels"]])
    truncated = sum(1 for ids, owner, n in dev_x + [x for x, _ in train_x] if len(ids) >= args.max_len)
    model = WholeAbstractTagger(path, args.context, args.pool, len(LABELS))
    encoder_params = list(model.encoder.parameters())
    head_params = [p for name, p in model.named_parameters() if not name.startswith("encoder.")]
    optimizer = torch.optim.AdamW(
        [{"params": encoder_params, "lr": args.lr}, {"params": head_params, "lr": 1e-3}], weight_decay=0.01
    )
    steps_per_epoch = (len(train_x) + args.batch_size - 1) // args.batch_size
    total = args.epochs * steps_per_epoch
    warmup = max(1, int(0.1 * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: s / warmup if s < warmup else max(0.0, (total - s) / (total - warmup))
    )

    def evaluate(epoch):
        model.eval()
        preds, feats, logits = [], [], []
        with torch.no_grad():
            for i in range(0, len(dev_x), 16):
                f = model.features(dev_x[i : i + 16])
                out = model.output(f)
                feats.append(f.numpy())
                logits.append(out.numpy())
                preds += [LABELS[j] for j in out.argmax(1).tolist()]
        model.train()
        feats, logits = numpy.concatenate(feats), numpy.concatenate(logits)
        if args.features_out:
            args.features_out.mkdir(parents=True, exist_ok=True)
            numpy.save(args.features_out / f"dev_features_epoch{epoch}.npy", feats)
            numpy.save(args.features_out / f"dev_logits_epoch{epoch}.npy", logits)
        retrieval = retrieval_scores(feats, dev_y)
        logit_retrieval = retrieval_scores(logits, dev_y)
        nn, _ = cosine_neighbours(feats, 1)
        same_abstract = float((dev_abstract[nn[:, 0]] == dev_abstract).mean())
        return {
            "nn_same_abstract": same_abstract,
            "logits_p_at_1": logit_retrieval["p_at_1"],
            "logits_map_at_r": logit_retrieval["map_at_r"],
            "f1_micro": float(f1_score(dev_y, preds, average="micro")),
            "f1_macro": float(f1_score(dev_y, preds, average="macro")),
            "per_label_f1": dict(zip(LABELS, map(float, f1_score(dev_y, preds, labels=LABELS, average=None)))),
            "p_at_1": retrieval["p_at_1"],
            "map_at_r": retrieval["map_at_r"],
        }

    report = {"args": {k: str(v) for k, v in vars(args).items()}, "torch_threads": torch.get_num_threads(),
              "sequences_truncated": truncated, "epochs": []}
    start = time.time()
    step = 0
    for epoch in range(args.epochs):
        rng.shuffle(train_x)
        losses = []
        for i in range(0, len(train_x), args.batch_size):
            batch = train_x[i : i + args.batch_size]
            logits = model([x for x, _ in batch])
            gold = torch.tensor([label for _, labels in batch for label in labels])
            loss = torch.nn.functional.cross_entropy(logits, gold)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            step += 1
            losses.append(loss.item())
            if step % 50 == 0:
                print(f"step {step}/{total} loss(last 50) {numpy.mean(losses[-50:]):.3f} {time.time() - start:.0f}s", flush=True)
        scores = evaluate(epoch + 1)
        scores.update(epoch=epoch + 1, step=step, wall_s=round(time.time() - start, 1),
                      train_loss=float(numpy.mean(losses)))
        report["epochs"].append(scores)
        print(json.dumps({k: v for k, v in scores.items() if k != "per_label_f1"}), flush=True)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
