"""Section-aware function labels: the same network and training budget with
and without the section input (configs/classifier_sections.cfg,
``use_sections`` true / false), trained on the multi-source corpus of
``spacy_rhetoric.readers.section_labels`` (CSAbstruct train + PMC-Sents-FULL
train_fit + CL-SciSumm papers with weak labels from their tagged sections).

Reported (model-last of each run, i.e. the same number of steps):

* F1-micro / macro (``function_classifier.score_function_classifier``, i.e.
  ``scorers.sentence_label_scores``) on CSAbstruct dev (section: abstract)
  and on the article-disjoint PMC-Sents-FULL test split (section unknown;
  labels methods -> method, results -> result);
* on held-out CL-SciSumm papers (paper-disjoint from training): the share of
  body sentences (section introduction / related work / method / results /
  conclusion, tagged by rhetoric_section_tagger) whose predicted label
  agrees with their section (``SECTION_LABELS``: introduction, related work
  -> background, method -> method, results -> result, conclusion -> other),
  and the share of back-matter sentences labelled other.

    python -m spacy_rhetoric.readers.section_labels corpus/sections --data ../shared/data
    python benchmarks/classifier/bench_sections.py --steps 600          # trains both (if missing), then evaluates
    python benchmarks/classifier/bench_sections.py --models training/sections_bench/with/model-last ...  # evaluate only
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from spacy_rhetoric.extensions import SECTION, get_span_value
from spacy_rhetoric.ml.sections import BACK_MATTER, BODY_SECTIONS, sentence_sections
from spacy_rhetoric.pipeline.function_classifier import score_function_classifier
from spacy_rhetoric.readers.section_labels import SECTION_LABELS, copy_section_fields
from spacy_rhetoric.resources import config_path

RUNS = {"with": "true", "without": "false"}


def train(corpus: Path, output: Path, steps: int, eval_frequency: int) -> None:
    for name, flag in RUNS.items():
        out = output / name
        if (out / "model-last" / "meta.json").exists():
            print(f"reusing {out}")
            continue
        cmd = [sys.executable, "-m", "spacy", "train", str(config_path("classifier_sections")), "--output",
               str(out), "--paths.train", str(corpus / "train.spacy"), "--paths.dev", str(corpus / "dev.spacy"),
               "--training.max_steps", str(steps), "--training.eval_frequency", str(eval_frequency),
               "--components.rhetoric_function_classifier.model.use_sections", flag]
        print(" ".join(cmd), flush=True)
        start = time.perf_counter()
        subprocess.run(cmd, check=True)
        print(f"trained {name} in {time.perf_counter() - start:.0f} s", flush=True)


def predicted_docs(nlp, path: Path) -> List[Example]:
    """Examples whose predicted docs carry the gold sentence boundaries and
    the sections (the classifier's input) of the reference docs."""
    refs = list(DocBin().from_disk(path).get_docs(nlp.vocab))
    examples = []
    for ref in refs:
        pred = Doc(nlp.vocab, words=[t.text for t in ref], spaces=[bool(t.whitespace_) for t in ref],
                   sent_starts=[bool(t.is_sent_start) for t in ref])
        examples.append(Example(copy_section_fields(ref, pred), ref))
    docs = nlp.pipe([eg.predicted for eg in examples], batch_size=16)
    for eg, doc in zip(examples, docs):
        eg.predicted = doc
    return examples


def agreement(examples: List[Example]) -> Dict[str, float]:
    agree = body = back = back_other = 0
    per: Dict[str, List[int]] = {}
    for eg in examples:
        sents = [s for s in eg.predicted.sents if s.text.strip()]
        features = sentence_sections(eg.predicted, [s.start for s in sents])
        for sent, feature in zip(sents, features):
            section = get_span_value(sent, SECTION)
            label = sent._.rhetoric_label
            if feature == BACK_MATTER:
                back += 1
                back_other += label == "other"
            elif section in BODY_SECTIONS:
                ok = label == SECTION_LABELS[section]
                body += 1
                agree += ok
                per.setdefault(section, [0, 0])
                per[section][0] += ok
                per[section][1] += 1
    out = {"body_agreement": agree / max(1, body), "body_sentences": body,
           "back_matter_other": back_other / max(1, back), "back_matter_sentences": back}
    out.update({f"agree_{k}": v[0] / v[1] for k, v in sorted(per.items())})
    return out


def evaluate(model: Path, corpus: Path) -> Dict[str, float]:
    nlp = spacy.load(model)
    row: Dict[str, float] = {}
    for name in ("csabstruct_dev", "pmc_test"):
        scores = score_function_classifier(predicted_docs(nlp, corpus / f"{name}.spacy"))
        row[f"{name}_f_micro"] = scores["rhetoric_f_micro"]
        row[f"{name}_f_macro"] = scores["rhetoric_f_macro"]
    row.update(agreement(predicted_docs(nlp, corpus / "scisumm_heldout.spacy")))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("corpus/sections"))
    parser.add_argument("--output", type=Path, default=Path("training/sections_bench"))
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--eval-frequency", type=int, default=200)
    parser.add_argument("--models", type=Path, nargs="*", help="evaluate these pipelines only (no training)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = parser.parse_args()
    if args.models:
        models = {str(m): m for m in args.models}
    else:
        train(args.corpus, args.output, args.steps, args.eval_frequency)
        models = {f"{name} sections": args.output / name / "model-last" for name in RUNS}
    rows = {}
    for name, model in models.items():
        start = time.perf_counter()
        rows[name] = evaluate(model, args.corpus)
        print(f"{name}: {json.dumps({k: round(v, 3) for k, v in rows[name].items()})} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
