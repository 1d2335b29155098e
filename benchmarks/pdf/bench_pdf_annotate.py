"""The PDF reader's share of ``annotate``'s wall time on shared/data/paper-pdfs.

Without ``--pipeline``, a stand-in is built in a temporary folder:
en_core_web_sm (parser) + rhetoric_section_tagger + rhetoric_function_classifier
+ rhetoric_sentence_encoder with their default configs, initialized on four
sentences (untrained: the labels mean nothing, the compute is the real one).
Then ``annotate_corpus`` runs over the two PDFs (wall clock, the pipeline
loaded inside each run, as the CLI does; reading included) and the PDF reader
alone (``read_paper`` on each PDF) is timed in the same process, alternating,
``--repeats`` times; the share is the ratio of the medians (wall clock; also
CPU time of this single process, less sensitive to other jobs on the machine).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pdf/bench_pdf_annotate.py [--data ../shared/data] [--pipeline DIR]
"""
import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import spacy
from spacy.training import Example

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.apps.annotate import AnnotateSettings, annotate_corpus
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.readers.papers import read_paper
from spacy_rhetoric.util import load_parser


def build_pipeline(path: Path) -> Path:
    nlp = load_parser("en_core_web_sm")
    nlp.add_pipe("rhetoric_section_tagger")
    nlp.add_pipe("rhetoric_function_classifier")
    nlp.add_pipe("rhetoric_sentence_encoder")
    sents = ["Parsing is important.", "We aim to parse.", "We propose a method.", "It works."]
    labels = ["background", "objective", "method", "result"]
    ref = doc_from_sentences(nlp, sents, labels=labels)
    ref = nlp.get_pipe("parser")(nlp.get_pipe("tok2vec")(ref))
    examples = [Example(ref.copy(), ref)]
    for name in ("rhetoric_section_tagger", "rhetoric_function_classifier", "rhetoric_sentence_encoder"):
        nlp.get_pipe(name).initialize(lambda: examples, nlp=nlp)
    nlp.to_disk(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    parser.add_argument("--pipeline", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pdf_dir = args.data / "paper-pdfs"
    pdfs = sorted(pdf_dir.glob("*.pdf"))
    with tempfile.TemporaryDirectory() as tmp:
        pipeline = args.pipeline or build_pipeline(Path(tmp) / "pipeline")
        annotate_times, read_times, annotate_cpu, read_cpu = [], [], [], []
        nlp = spacy.blank("en")
        for _ in range(args.repeats):  # alternating, medians
            start, cpu = time.perf_counter(), time.process_time()
            summary = annotate_corpus(pipeline, pdfs, Path(tmp) / "out", AnnotateSettings(fmt="pdf", overwrite=True))
            annotate_times.append(time.perf_counter() - start)
            annotate_cpu.append(time.process_time() - cpu)
            start, cpu = time.perf_counter(), time.process_time()
            for pdf in pdfs:
                read_paper(pdf, nlp)
            read_times.append(time.perf_counter() - start)
            read_cpu.append(time.process_time() - cpu)
        annotate_s, read_s = statistics.median(annotate_times), statistics.median(read_times)
    row = {"pipeline": str(args.pipeline or "stand-in: en_core_web_sm + section tagger + classifier + encoder"),
           "papers": summary["papers"], "sentences": summary["sentences"],
           "annotate_wall_s": round(annotate_s, 2), "pdf_reader_s": round(read_s, 2),
           "reader_share": round(read_s / annotate_s, 3), "annotate_runs_s": [round(t, 2) for t in annotate_times],
           "reader_runs_s": [round(t, 2) for t in read_times],
           "cpu_annotate_s": round(statistics.median(annotate_cpu), 2), "cpu_reader_s": round(statistics.median(read_cpu), 2),
           "cpu_reader_share": round(statistics.median(read_cpu) / statistics.median(annotate_cpu), 3),
           "run_shares": [round(r / a, 3) for r, a in zip(read_times, annotate_times)]}
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
