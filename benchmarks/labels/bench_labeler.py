"""Benchmark of rhetoric_phrase_labeler on the CL-SciSumm reference papers.

Two measurements, one run:

1. Speed: parser+labeler words/s divided by parser-alone words/s on the same
   Docs (the first ``--speed-papers`` reference papers). Both pipelines are the
   same ``en_core_web_sm`` object (``--exclude`` components left out); the
   labeler is switched off with ``nlp.select_pipes``. The runs alternate
   (parser, parser+labeler, parser, ...) ``--repeats`` times and the ratio of
   the median times is reported, together with the labeler's own time on
   already parsed Docs (``t_parse / (t_parse + t_label)``), which is far less
   sensitive to other jobs on a shared machine. Docs are built (tokenized,
   gold sentence boundaries) before the clock starts; "words" are tokens.
2. Coverage: every reference paper (``--data``: training-40-manual and
   scisummnet-2019-auto) through parser+labeler with the XML's sentence
   boundaries; counts sentences, labelled sentences and labelled sentences
   per label and per corpus. Per-paper counts go to ``--checkpoint`` (JSON
   lines), so an interrupted run resumes where it stopped.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/labels/bench_labeler.py \
        --out benchmarks/labels/results/labeler.json
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = Path(os.environ.get("SPACY_RHETORIC_DATA", REPO.parent / "shared" / "data"))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--parser", default="en_core_web_sm")
    p.add_argument("--exclude", default="ner", help="comma-separated components to leave out")
    p.add_argument("--n", type=int, default=5)
    p.add_argument("--speed-papers", type=int, default=25)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--label-repeats", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--coverage-limit", type=int, default=0, help="papers for coverage (0 = all)")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--skip-coverage", action="store_true")
    p.add_argument(
        "--summarize-only",
        action="store_true",
        help="no parsing: summarise the papers in --checkpoint so far into --out "
        "(keeps the speed figures already in --out)",
    )
    p.add_argument("--checkpoint", type=Path, default=REPO / "benchmarks" / "labels" / "results" / "labeler_coverage.jsonl")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "labels" / "results" / "labeler.json")
    return p.parse_args(argv)


def build_nlp(args):
    from spacy_rhetoric.util import load_parser

    exclude = [x for x in args.exclude.split(",") if x]
    nlp = load_parser(args.parser, exclude=exclude)
    labeler = nlp.add_pipe("rhetoric_phrase_labeler", config={"n": args.n})
    labeler.initialize(phrases=str(args.data / "iwatsuki2021-fe-database-cl"), nlp=nlp)
    return nlp, labeler


def reference_papers(args):
    """(corpus, topic, ReferencePaper) for every topic, sorted."""
    from spacy_rhetoric.readers.clscisumm import iter_topics, read_reference_xml

    root = args.data / "cl-scisumm"
    for topic in iter_topics(root):
        corpus = topic.root.parent.name
        yield corpus, topic.topic_id, read_reference_xml(topic.reference_xml)


def time_pipe(nlp, docs, batch_size):
    """(wall seconds, CPU seconds of this process). On a machine shared with
    other jobs the CPU time is the meaningful one: it does not count the time
    the process waits for a core."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in nlp.pipe(docs, batch_size=batch_size):
        pass
    return time.perf_counter() - wall, time.process_time() - cpu


def speed(args, nlp, labeler):
    from spacy_rhetoric.readers.clscisumm import reference_doc

    papers = []
    for i, (_, _, paper) in enumerate(reference_papers(args)):
        if i >= args.speed_papers:
            break
        papers.append(paper)
    base = [reference_doc(nlp, p) for p in papers]
    n_words = sum(len(d) for d in base)
    n_sents = sum(len(p.sentences) for p in papers)
    print(f"speed set: {len(papers)} papers, {n_sents} sentences, {n_words} tokens", flush=True)
    parser_times, full_times = [], []
    # Warm-up (untimed): first calls allocate and fill caches.
    time_pipe(nlp, [d.copy() for d in base[:3]], args.batch_size)

    def run_parser():
        with nlp.select_pipes(disable=[labeler.name]):
            parser_times.append(time_pipe(nlp, [d.copy() for d in base], args.batch_size))

    def run_full():
        full_times.append(time_pipe(nlp, [d.copy() for d in base], args.batch_size))

    for rep in range(args.repeats):
        # Alternate the order (AB, BA, ...) so drifting load hits both alike.
        for run in (run_parser, run_full) if rep % 2 == 0 else (run_full, run_parser):
            run()
        print(
            f"  rep {rep + 1}: parser {n_words / parser_times[-1][1]:.0f} words/CPU-s "
            f"({n_words / parser_times[-1][0]:.0f} wall), parser+labeler "
            f"{n_words / full_times[-1][1]:.0f} words/CPU-s ({n_words / full_times[-1][0]:.0f} wall)",
            flush=True,
        )
    with nlp.select_pipes(disable=[labeler.name]):
        parsed = list(nlp.pipe([d.copy() for d in base], batch_size=args.batch_size))
    label_times = []
    for _ in range(args.label_repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        for doc in parsed:
            labeler(doc)
        label_times.append((time.perf_counter() - wall, time.process_time() - cpu))
    result = {
        "papers": len(papers),
        "sentences": n_sents,
        "tokens": n_words,
        "repeats": args.repeats,
    }
    for clock, j in (("cpu", 1), ("wall", 0)):
        t_parser = statistics.median(t[j] for t in parser_times)
        t_full = statistics.median(t[j] for t in full_times)
        t_label = statistics.median(t[j] for t in label_times)
        result[clock] = {
            "parser_words_per_s": n_words / t_parser,
            "parser_labeler_words_per_s": n_words / t_full,
            "ratio_end_to_end": t_parser / t_full,
            "paired_ratios": [p[j] / f[j] for p, f in zip(parser_times, full_times)],
            "labeler_only_words_per_s": n_words / t_label,
            "ratio_from_component_time": t_parser / (t_parser + t_label),
        }
    print(json.dumps(result, indent=2), flush=True)
    return result


VARIANTS = {
    # name: labeler config (all other settings as the main labeler)
    "n=5, keep_short=False": {"n": 5, "keep_short": False},
    "n=4": {"n": 4},
    "n=3": {"n": 3},
    "n=6": {"n": 6},
    "attr=LOWER": {"attr": "LOWER"},
}


def build_variants(args, nlp):
    from spacy_rhetoric.pipeline.phrase_labeler import PhraseLabeler

    variants = {}
    for name, cfg in VARIANTS.items():
        labeler = PhraseLabeler(nlp.vocab, name=f"variant {name}", **{"n": args.n, **cfg})
        labeler.initialize(phrases=str(args.data / "iwatsuki2021-fe-database-cl"), nlp=nlp)
        variants[name] = labeler
    return variants


def any_ngram(sent, table, lengths, keys):
    """True when the sentence holds any listed n-gram, root or not."""
    words = [keys[i] for i in range(sent.start, sent.end)]
    for length in lengths:
        for i in range(len(words) - length + 1):
            if tuple(words[i : i + length]) in table:
                return True
    return False


def coverage(args, nlp, labeler, *, run=True):
    from spacy_rhetoric.extensions import DOC_ID, get_doc_value
    from spacy_rhetoric.readers.clscisumm import reference_doc

    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        tqdm = None
    args.checkpoint.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    if args.checkpoint.exists():
        for line in args.checkpoint.read_text(encoding="utf8").splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["paper"]] = row
    todo = []
    n_papers = 0
    for corpus, topic, paper in reference_papers(args) if run else ():
        if args.coverage_limit and n_papers >= args.coverage_limit:
            break
        n_papers += 1
        if topic not in done:
            todo.append((corpus, topic, paper))
    print(f"coverage: {n_papers} papers, {len(done)} from checkpoint, {len(todo)} to run", flush=True)
    variants = build_variants(args, nlp) if run else {}
    table = labeler.table if run else {}
    lengths = sorted({len(k) for k in table})
    corpus_of = {topic: corpus for corpus, topic, _ in todo}
    docs = (reference_doc(nlp, paper) for _, _, paper in todo)
    bar = tqdm(total=len(todo), unit="paper") if tqdm else None
    start = time.perf_counter()
    n_tokens = 0
    with args.checkpoint.open("a", encoding="utf8") as out:
        for doc in (nlp.pipe(docs, batch_size=4) if run else ()):
            topic = get_doc_value(doc, DOC_ID)
            sents = list(doc.sents)
            labels = [s._.phrase_label for s in sents]
            row = {
                "paper": topic,
                "corpus": corpus_of[topic],
                "tokens": len(doc),
                "sentences": len(sents),
                "labeled": sum(1 for x in labels if x),
                "per_label": dict(Counter(x for x in labels if x)),
                "examples": [
                    [s._.phrase_label, s._.phrase_match.text, s.text[:300]]
                    for s in sents
                    if s._.phrase_label
                ][:3],
            }
            # Same parsed Doc, other settings (labelers are cheap; parsing is not).
            keys = [t.lemma_.lower() for t in doc]
            # "no root rule": any listed n-gram anywhere in the sentence.
            row["variants"] = {
                "no root rule": sum(1 for s in sents if any_ngram(s, table, lengths, keys))
            }
            for name, variant in variants.items():
                variant(doc)
                row["variants"][name] = sum(1 for s in doc.sents if s._.phrase_label)
            n_tokens += len(doc)
            out.write(json.dumps(row) + "\n")
            out.flush()
            done[topic] = row
            if bar:
                bar.update(1)
    if bar:
        bar.close()
    elapsed = time.perf_counter() - start
    rows = [r for r in done.values()]
    total = {"papers": len(rows), "sentences": 0, "labeled": 0}
    per_corpus = {}
    per_label: Counter = Counter()
    variant_totals = {}
    for r in rows:
        total["sentences"] += r["sentences"]
        total["labeled"] += r["labeled"]
        c = per_corpus.setdefault(r["corpus"], {"papers": 0, "sentences": 0, "labeled": 0})
        c["papers"] += 1
        c["sentences"] += r["sentences"]
        c["labeled"] += r["labeled"]
        per_label.update(r["per_label"])
        for name, value in r.get("variants", {}).items():
            variant_totals[name] = variant_totals.get(name, 0) + value
    total["coverage"] = total["labeled"] / total["sentences"] if total["sentences"] else 0.0
    result = {
        **total,
        "per_corpus": per_corpus,
        "per_label": dict(per_label.most_common()),
        "variants_labeled": variant_totals,
        "variants_tables": {name: v.stats for name, v in variants.items()},
        "this_run_papers": len(todo),
        "this_run_seconds": elapsed,
        "this_run_tokens_per_s": n_tokens / elapsed if elapsed else None,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "per_label"}, indent=2), flush=True)
    return result


def markdown(report) -> str:
    """The figures of ``report`` as the rows of docs/notes/benchmark-log.md."""
    lines = []
    sp = report.get("speed")
    if sp:
        for clock in ("cpu", "wall"):
            r = sp[clock]
            lines.append(
                f"| speed, {clock} clock ({sp['papers']} papers, {sp['tokens']:,} tokens, "
                f"median of {sp['repeats']}) | parser {r['parser_words_per_s']:,.0f} words/s; "
                f"parser+labeler {r['parser_labeler_words_per_s']:,.0f} words/s; "
                f"**ratio {r['ratio_end_to_end']:.3f}** (paired: "
                f"{', '.join(f'{x:.3f}' for x in r['paired_ratios'])}); labeler alone "
                f"{r['labeler_only_words_per_s']:,.0f} words/s -> parse/(parse+label) "
                f"**{r['ratio_from_component_time']:.4f}** |"
            )
    cov = report.get("coverage")
    if cov:
        lines.append(
            f"| coverage, all reference papers | {cov['papers']:,} papers, "
            f"{cov['sentences']:,} sentences, **{cov['labeled']:,} labelled "
            f"({100 * cov['coverage']:.2f}%)** |"
        )
        for name, c in sorted(cov["per_corpus"].items()):
            lines.append(
                f"| coverage, {name} | {c['papers']:,} papers, {c['sentences']:,} sentences, "
                f"{c['labeled']:,} labelled ({100 * c['labeled'] / c['sentences']:.2f}%) |"
            )
        for name, n in cov.get("variants_labeled", {}).items():
            lines.append(
                f"| variant: {name} | {n:,} labelled ({100 * n / cov['sentences']:.2f}%) |"
            )
        lines.append("")
        lines.append("| label | labelled sentences |")
        lines.append("| --- | --- |")
        for label, n in cov["per_label"].items():
            lines.append(f"| {label} | {n:,} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    if args.summarize_only:
        report = json.loads(args.out.read_text(encoding="utf8")) if args.out.exists() else {}
        report["coverage"] = coverage(args, None, None, run=False)
        report["coverage"]["partial_summary_utc"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2), encoding="utf8")
        print(markdown(report))
        print(f"wrote {args.out}")
        return
    nlp, labeler = build_nlp(args)
    report = {
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_start": os.getloadavg(),
        "pipeline": nlp.pipe_names,
        "table": labeler.stats,
    }
    if not args.skip_speed:
        report["speed"] = speed(args, nlp, labeler)
        report["load_average_after_speed"] = os.getloadavg()
    if not args.skip_coverage:
        report["coverage"] = coverage(args, nlp, labeler)
    report["load_average_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf8")
    print(markdown(report))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
