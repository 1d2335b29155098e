"""Training speed of rhetoric_trf.cfg's shared transformer ("more
epochs for the same CPU time"): ``nlp.update`` vs a plain PyTorch loop over the
same batches.

spaCy side: ``configs/rhetoric_trf.cfg`` (MiniLM-L6 transformer,
context classifier and context encoder listening to it) built and initialized
on the first ``--init-docs`` CSAbstruct train abstracts, the config's own
optimizer (Adam, warmup-linear schedule, grad clip 1.0); one step =
``nlp.update(batch, sgd=optimizer)`` on ``--batch-size`` abstracts (the
config's ``batch_by_sequence`` size 16).

Plain side: ``transformers.AutoModel`` of the same local MiniLM weights,
each abstract one sequence (its sentences joined by a space, as the config's
``sentence_windows`` make an abstract one window), word pieces mean-pooled per
sentence (offset mapping -> sentence), a linear head over the 5 labels,
cross-entropy, ``torch.optim.AdamW`` (lr 5e-5, weight decay 0.01, grad clip 1.0).
Same abstracts in the same batches on both sides.

Both sides in one process, ``torch.set_num_threads(--threads)``, one warm-up
step each (excluded), then ``--repeats`` rounds of ``--steps`` steps per side,
alternating which side goes first. Figure: training sentences/s (labelled
sentences of the batches / wall seconds), ratio spaCy / plain per round.

Profile of one spaCy step: word pieces real (attention mask) vs padded,
windows per doc (the config's span getter), and with ``--profile PATH`` a cProfile of
``--profile-steps`` steps per side (top functions by own time in the JSON report).

    python benchmarks/speed/bench_train_step.py --threads 1 --steps 5 --repeats 4 \\
        --profile /tmp/train_step.prof --out benchmarks/speed/results/train_step.json

``--profile PATH`` writes ``PATH.spacy`` and ``PATH.plain`` (cProfile of
``--profile-steps`` steps of each side, after the timed rounds).
"""
import cProfile
import json
import os
import platform
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import spacy  # noqa: E402
import typer  # noqa: E402
from spacy.training import Example  # noqa: E402
from wasabi import msg  # noqa: E402

import spacy_rhetoric  # noqa: F401,E402
from spacy_rhetoric.readers.csabstruct import read_csabstruct  # noqa: E402
from spacy_rhetoric.resources import config_path  # noqa: E402
from spacy_rhetoric.util import resolve_hf_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT.parent / "shared" / "data" / "csabstruct" / "train.jsonl"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LABELS = ("background", "objective", "method", "result", "other")


def build_spacy(init_docs: int):
    config = spacy.util.load_config(config_path("rhetoric_trf"), interpolate=True)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    docs = list(read_csabstruct(TRAIN, nlp.vocab, limit=init_docs))
    nlp.initialize(lambda: [Example(nlp.make_doc(d.text), d) for d in docs])
    return nlp, spacy.util.registry.resolve({"optimizer": config["training"]["optimizer"]})["optimizer"]


class Plain:
    """AutoModel + per-sentence mean pooling + linear head + AdamW."""

    def __init__(self, lr: float = 5e-5):
        import torch
        from transformers import AutoModel, AutoTokenizer

        path = resolve_hf_model(MODEL)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True)
        self.model = AutoModel.from_pretrained(path)
        self.head = torch.nn.Linear(self.model.config.hidden_size, len(LABELS))
        params = list(self.model.parameters()) + list(self.head.parameters())
        self.params = params
        self.opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
        self.model.train()

    def step(self, batch: List[Dict]) -> Dict[str, int]:
        torch = self.torch
        texts = [" ".join(b["sentences"]) for b in batch]
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=512,
                             return_offsets_mapping=True, return_tensors="pt")
        offsets = enc.pop("offset_mapping")
        n_seq, seq_len = enc["input_ids"].shape
        rows, cols, labels = [], [], []
        n_sent = 0
        for i, b in enumerate(batch):
            # char start of each sentence in the joined text
            starts, pos = [], 0
            for s in b["sentences"]:
                starts.append(pos)
                pos += len(s) + 1
            mask = enc["attention_mask"][i].tolist()
            for t in range(seq_len):
                a, e = offsets[i, t].tolist()
                if not mask[t] or e == a:  # padding, [CLS], [SEP]
                    continue
                k = sum(1 for st in starts if st <= a) - 1
                rows.append(n_sent + k)
                cols.append(i * seq_len + t)
            labels.extend(LABELS.index(label) for label in b["labels"])
            n_sent += len(b["sentences"])
        pool = torch.zeros(n_sent, n_seq * seq_len)
        pool[rows, cols] = 1.0
        pool = pool / pool.sum(1, keepdim=True).clamp(min=1.0)
        hidden = self.model(**enc).last_hidden_state.reshape(n_seq * seq_len, -1)
        logits = self.head(pool @ hidden)
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor(labels))
        self.opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        self.opt.step()
        return {"sentences": n_sent, "real_pieces": int(enc["attention_mask"].sum()),
                "padded_pieces": int(n_seq * seq_len), "windows": n_seq}


def load_records(n: int) -> List[Dict]:
    out = []
    with TRAIN.open(encoding="utf8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
            if len(out) >= n:
                break
    return out


def spacy_profile(nlp, examples: List[Example]) -> Dict:
    """Word pieces real vs padded and windows per doc of one batch."""
    docs = [eg.predicted for eg in examples]
    for name in ("sentencizer",):
        if name in nlp.pipe_names:
            docs = [nlp.get_pipe(name)(d) for d in docs]
    trf = nlp.get_pipe("transformer")
    batch = trf.predict(docs)
    ids = batch.wordpieces.input_ids
    mask = batch.wordpieces.attention_mask
    windows = [len(list(trf.model.attrs["get_spans"]([d])[0])) for d in docs]
    return {"windows": int(ids.shape[0]), "pieces_per_window_padded": int(ids.shape[1]),
            "real_pieces": int(mask.sum()), "padded_pieces": int(ids.size),
            "windows_per_doc": windows, "tokens": sum(len(d) for d in docs)}


def main(
    threads: int = typer.Option(1, help="torch threads (both sides)"),
    batch_size: int = typer.Option(16, help="abstracts per step (rhetoric_trf.cfg: 16)"),
    steps: int = typer.Option(4, help="timed steps per side per round"),
    repeats: int = typer.Option(3, help="rounds; the side that goes first alternates"),
    init_docs: int = typer.Option(50, help="CSAbstruct train abstracts for nlp.initialize"),
    profile: Optional[Path] = typer.Option(None, help="write a cProfile of spaCy steps here"),
    profile_steps: int = typer.Option(2, help="spaCy steps under cProfile"),
    out: Path = typer.Option(ROOT / "benchmarks" / "speed" / "results" / "train_step.json"),
):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    report: Dict = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "command": " ".join(sys.argv),
                    "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                                "loadavg_start": os.getloadavg()}, "torch_threads": torch.get_num_threads()}
    nlp, optimizer = build_spacy(init_docs)
    plain = Plain()
    n_batches = 1 + steps
    records = load_records(batch_size * n_batches)
    batches = [records[i * batch_size:(i + 1) * batch_size] for i in range(n_batches)]
    gold = list(read_csabstruct(TRAIN, nlp.vocab, limit=batch_size * n_batches))
    sp_batches = [[Example(nlp.make_doc(d.text), d) for d in gold[i * batch_size:(i + 1) * batch_size]]
                  for i in range(n_batches)]
    assert [len(b) for b in sp_batches] == [len(b) for b in batches]
    report["profile_one_batch_spacy"] = spacy_profile(nlp, sp_batches[1])

    def run_spacy(bs) -> int:
        losses: Dict[str, float] = {}
        for b in bs:
            nlp.update(b, sgd=optimizer, losses=losses)
        return sum(len(list(eg.reference.sents)) for b in bs for eg in b)

    def run_plain(bs) -> Dict[str, int]:
        tot: Dict[str, int] = {}
        for b in bs:
            for k, v in plain.step(b).items():
                tot[k] = tot.get(k, 0) + v
        return tot

    run_spacy(sp_batches[:1])  # warm-up
    report["profile_one_batch_plain"] = run_plain(batches[1:2])
    run_plain(batches[:1])
    rounds = []
    for r in range(repeats):
        sides = ["spacy", "plain"] if r % 2 == 0 else ["plain", "spacy"]
        row: Dict = {"first": sides[0]}
        for side in sides:
            t0 = time.perf_counter()
            if side == "spacy":
                n = run_spacy(sp_batches[1:])
            else:
                n = run_plain(batches[1:])["sentences"]
            wall = time.perf_counter() - t0
            row[side] = {"sentences": n, "wall_s": round(wall, 3), "sents_per_s": round(n / wall, 2)}
        row["ratio_spacy_over_plain"] = round(row["spacy"]["sents_per_s"] / row["plain"]["sents_per_s"], 3)
        row["loadavg"] = os.getloadavg()
        msg.info(json.dumps(row))
        rounds.append(row)
    report["rounds"] = rounds
    report["median"] = {} if not rounds else {
        "spacy_sents_per_s": statistics.median(r["spacy"]["sents_per_s"] for r in rounds),
        "plain_sents_per_s": statistics.median(r["plain"]["sents_per_s"] for r in rounds),
        "ratio": statistics.median(r["ratio_spacy_over_plain"] for r in rounds)}
    if profile is not None:
        report["cprofile"] = {}
        for side, fn, bs in (("spacy", run_spacy, sp_batches), ("plain", run_plain, batches)):
            prof = cProfile.Profile()
            prof.enable()
            fn(bs[1:1 + profile_steps])
            prof.disable()
            prof.dump_stats(f"{profile}.{side}")
            stats = pstats.Stats(prof)
            total = stats.total_tt
            rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:25]
            report["cprofile"][side] = {"total_s": round(total, 3), "steps": profile_steps, "top_own_time": [
                {"function": f"{Path(k[0]).name}:{k[1]}({k[2]})", "own_s": round(v[2], 3),
                 "share": round(v[2] / total, 4), "cum_s": round(v[3], 3)} for k, v in rows]}
    report["machine"]["loadavg_end"] = os.getloadavg()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    msg.good(f"median {report['median']}; wrote {out}")


if __name__ == "__main__":
    typer.run(main)
