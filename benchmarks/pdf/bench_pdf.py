"""PDF readers against GROBID's TEI of the same file (shared/data/paper-pdfs).

For each PDF and each reader (ours: ``readers.pdf`` on PDFium glyphs, the
default, and on pdfminer.six glyphs; and the plain text of pypdfium2, pypdf,
pdfminer.six and pdfplumber, as a user would get it, one paragraph per page),
in one run:

* body-sentence recall: share of the TEI body sentences (TEI reader, spaCy
  sentencizer; at least 20 letters/digits) whose normalised text (NFKD, lower
  case, letters and digits only) occurs in the reader's normalised body text;
* precision: share of the reader's body sentences (same filter) whose
  normalised text occurs in the TEI's normalised body text. The reader's body
  is every sentence but the abstract, acknowledgements and references (GROBID
  0.6.1 put the SPECTER appendix in its TEI body, so appendices count on both
  sides); for the plain-text baselines, all of their text;
* numbered headings: GROBID's headings with a number (``head/@n``) found among
  the reader's headings with the same number and the same text (or a text
  GROBID's starts with, where GROBID glued the next heading on); the
  baselines: a line of their text equal to "number text";
* title and abstract: normalised title equal; abstract sentences of ours
  found in GROBID's abstract and GROBID's found in ours (GROBID's missed
  ones are listed);
* references: entries under "References" against GROBID's bibliography
  entries (``listBibl/biblStruct``);
* glued-word share: runs of letters longer than 25 among all runs of letters
  of the body text;
* unknown-word share: body words (letters only, 3+) that never occur in the
  TEI's whole text (body, abstract, notes, captions, references): split or
  mangled words;
* pages/s: pages over the median of 3 timed reads (wall clock);
* offenders (our reader only): body sentences that GROBID's body does not
  have and that hold a caption start ("Figure 2:"), the start of a GROBID
  footnote or caption, a reference entry (a title of GROBID's bibliography
  after "2018. "), a printed page number or the first page's running footer;
* left out (our reader): the lines of pages 1-3 kept out of the body, by
  kind (margin: headers, footers, page numbers; caption; table; note:
  footnotes and other small print; formula), listed in the JSON;
* "citations aside": recall and precision again with author-year citations
  taken out of both texts first (GROBID 0.6.1 drops some citation text:
  "(Tu et al., 2017;)", "See and for more details"); the unmatched and missed
  sentences listed in the JSON are those of this comparison.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pdf/bench_pdf.py [--data ../shared/data] [--out benchmarks/pdf/results/pdf.json]
"""
import argparse
import json
import re
import statistics
import time
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import spacy

from spacy_rhetoric.readers.fulltext import ABSTRACT, Paper, Paragraph, paper_doc
from spacy_rhetoric.readers.pdf import parse_pdf
from spacy_rhetoric.readers.tei import NS, parse_tei
from spacy_rhetoric.section_headings import HeadingRules, parse_heading

MIN_CHARS = 20
_CAPTION = re.compile(r"\b(Figure|Fig\.|Table)\s*\d+\s*:")
RULES = HeadingRules.packaged()


def norm(text: str) -> str:
    """Letters only: spacing, hyphenation, punctuation and digits (footnote
    marks GROBID leaves in its text: "SPECTER, 2 incorporates") do not count."""
    text = unicodedata.normalize("NFKD", text or "").lower()
    return re.sub(r"[^a-z]", "", text)


_CITES = re.compile(r"\([^()]*\b(?:1[89]|20)\d\d[a-z]?\b[^()]*\)"
                    r"|\b[A-Z][\w'’-]+(?: et al\.| and [A-Z][\w'’-]+)? \((?:1[89]|20)\d\d[a-z]?\)")


def norm_nocite(text: str) -> str:
    """``norm`` with author-year citations taken out first (GROBID 0.6.1
    drops some citation text: "(Tu et al., 2017;)", "See and for more
    details")."""
    return norm(_CITES.sub(" ", text or ""))


def norm_heading(text: str) -> str:
    text = unicodedata.normalize("NFKD", text or "").lower()
    return re.sub(r"[^a-z0-9]", "", text)


def tei_path(data: Path, pdf: Path) -> Path:
    local = pdf.with_name(pdf.stem + ".tei.xml")
    return local if local.exists() else data / "paper-formats" / "grobid-tei" / (pdf.stem + ".tei.xml")


# --------------------------------------------------------------------------
# Readers: path -> (Paper, n pages)


def _pages(path: Path) -> int:
    from pypdf import PdfReader

    return len(PdfReader(path).pages)


def _plain(texts: List[str], stem: str) -> Paper:
    paragraphs = [Paragraph(text=re.sub(r"\s+", " ", t).strip(), heading=None) for t in texts if t.strip()]
    paper = Paper(doc_id=stem, title=None, paragraphs=paragraphs, headings=[])
    paper.raw_lines = [line.strip() for t in texts for line in t.splitlines()]
    return paper


def read_ours(path: Path) -> Paper:
    return parse_pdf(path)


def read_ours_pdfminer(path: Path) -> Paper:
    return parse_pdf(path, backend="pdfminer")


def read_pdfium(path: Path) -> Paper:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return _plain([page.get_textpage().get_text_range() for page in pdf], path.stem)
    finally:
        pdf.close()


def read_pypdf(path: Path) -> Paper:
    from pypdf import PdfReader

    return _plain([p.extract_text() or "" for p in PdfReader(path).pages], path.stem)


def read_pdfminer(path: Path) -> Paper:
    from pdfminer.high_level import extract_text

    return _plain(extract_text(str(path)).split("\f"), path.stem)


def read_pdfplumber(path: Path) -> Paper:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        return _plain([p.extract_text() or "" for p in pdf.pages], path.stem)


READERS: Dict[str, Callable[[Path], Paper]] = {
    "spacy_rhetoric readers.pdf (PDFium glyphs, default)": read_ours,
    "spacy_rhetoric readers.pdf (pdfminer.six glyphs)": read_ours_pdfminer,
    "pypdfium2 get_text_range": read_pdfium,
    "pypdf extract_text": read_pypdf,
    "pdfminer.six extract_text": read_pdfminer,
    "pdfplumber extract_text": read_pdfplumber,
}


# --------------------------------------------------------------------------
# Scoring


_NOT_BODY = re.compile(r"^(acknowledge?ments?|references?|bibliography|funding)$")


def body_sentences(nlp, paper: Paper, structured: bool) -> Tuple[List[str], List[str]]:
    """(abstract sentences, body sentences) of a paper read by a reader:
    body is all but the abstract, acknowledgements and references (GROBID
    0.6.1 leaves appendices in its TEI body, so they count on both sides)."""
    doc = paper_doc(nlp, paper)
    abstract, body = [], []
    for sent in doc.sents:
        heading = sent._.rhetoric_heading
        if structured and heading and _NOT_BODY.match(parse_heading(heading).model_text):
            continue
        (abstract if heading == ABSTRACT else body).append(sent.text)
    return abstract, body


def tei_reference(path: Path, nlp) -> dict:
    paper = parse_tei(path)
    abstract, body = body_sentences(nlp, paper, structured=True)
    root = ET.parse(path).getroot()
    heads = [(h.get("n").rstrip("."), "".join(h.itertext()).strip())
             for h in root.iter(f"{NS}head") if h.get("n")]
    notes = [norm("".join(n.itertext()))[:30] for n in root.iter(f"{NS}note") if n.get("place") == "foot"]
    captions = [norm("".join(d.itertext()))[:30] for d in root.iter(f"{NS}figDesc")]
    bib_titles = [norm("".join(t.itertext())) for b in root.iter(f"{NS}biblStruct") for t in b.iter(f"{NS}title")]
    return {
        "title": paper.title or "",
        "abstract": abstract,
        "body": [s for s in body if len(norm(s)) >= MIN_CHARS],
        "body_norm": "".join(norm(s) for s in body),
        "body_nocite": "".join(norm_nocite(s) for s in body),
        "heads": heads,
        "notes": [n for n in notes if len(n) >= 15],
        "captions": [c for c in captions if len(c) >= 15],
        "bib_titles": [t for t in bib_titles if len(t) >= 25],
        "n_references": len(root.findall(f".//{NS}listBibl/{NS}biblStruct")),
        "vocab": set(re.findall(r"[^\W\d_]+", unicodedata.normalize("NFKC", "".join(root.itertext())).lower())),
    }


def heading_hits(paper: Paper, heads: List[Tuple[str, str]], structured: bool) -> Tuple[int, List[str]]:
    if structured:
        ours = {}
        for h in paper.headings:
            parsed = parse_heading(h or "")
            if parsed.number:
                ours.setdefault(".".join(parsed.number), []).append(norm_heading(h[len(h.split()[0]):]))
    else:
        lines = {norm_heading(line) for line in getattr(paper, "raw_lines", [])}
    hits, missed = 0, []
    for number, text in heads:
        if structured:
            found = any(t and (t == norm_heading(text) or norm_heading(text).startswith(t))
                        for t in ours.get(number, []))
        else:
            found = norm_heading(f"{number} {text}") in lines
        hits += found
        if not found:
            missed.append(f"{number} {text}")
    return hits, missed


def offenders(body: List[str], ref: dict, page_numbers: List[str], footers: List[str]) -> List[str]:
    out = []
    for sent in body:
        n = norm(sent)
        why = []
        if _CAPTION.search(sent):
            why.append("caption start")
        if any(c and c in n for c in ref["captions"]):
            why.append("GROBID caption")
        if any(x in n for x in ref["notes"]):
            why.append("GROBID footnote")
        if re.search(r"\b(?:19|20)\d\d[a-z]?\. ", sent) and any(t in n for t in ref["bib_titles"]):
            why.append("reference entry")
        if any(re.search(rf"(?<![\d.,]){p}(?![\d.,])", sent) for p in page_numbers):
            why.append("page number")
        if any(f in n for f in footers):
            why.append("running footer")
        if why and n not in ref["body_norm"]:
            out.append(f"{'/'.join(why)}: {sent[:120]}")
    return out


def left_out(pdf: Path, n_pages: int, backend: str) -> Dict[str, List[str]]:
    """The lines of the first pages that our reader keeps out of the body,
    by kind (margin, caption, table, note, formula)."""
    from spacy_rhetoric.readers.pdf.glyphs import load_pages
    from spacy_rhetoric.readers.pdf.structure import classify_lines

    lines, _ = classify_lines(load_pages(pdf, backend=backend))
    out: Dict[str, List[str]] = {}
    for page_lines in lines[:n_pages]:
        for line in page_lines:
            if line.kind != "body":
                out.setdefault(line.kind, []).append(line.text[:80])
    return out


def printed_margins(path: Path) -> Tuple[List[str], List[str]]:
    """Page numbers and venue lines of the file (pypdf's first/last lines of
    each page that are digits only / the first page's footer lines)."""
    from pypdf import PdfReader

    numbers, footers = [], []
    for i, page in enumerate(PdfReader(path).pages):
        lines = [line.strip() for line in (page.extract_text() or "").splitlines() if line.strip()]
        numbers += [line for line in lines[:1] + lines[-1:] if line.isdigit()]
        if i == 0:
            footers += [norm(line) for line in lines[:2] if len(norm(line)) > 20]
    return numbers, footers


def score(nlp, name: str, read: Callable[[Path], Paper], pdf: Path, ref: dict, n_pages: int) -> dict:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        paper = read(pdf)
        times.append(time.perf_counter() - start)
    structured = read in (read_ours, read_ours_pdfminer)
    abstract, body = body_sentences(nlp, paper, structured)
    body = [s for s in body if len(norm(s)) >= MIN_CHARS]
    ours_norm = "".join(norm(s) for s in body)
    recall = sum(norm(s) in ours_norm for s in ref["body"]) / max(1, len(ref["body"]))
    matched = [norm(s) in ref["body_norm"] for s in body]
    precision = sum(matched) / max(1, len(body))
    ours_nocite = "".join(norm_nocite(s) for s in body)
    recall_nc = sum(norm_nocite(s) in ours_nocite for s in ref["body"]) / max(1, len(ref["body"]))
    precision_nc = sum(norm_nocite(s) in ref["body_nocite"] for s in body) / max(1, len(body))
    hits, missed = heading_hits(paper, ref["heads"], structured)
    text = " ".join(body)
    runs = re.findall(r"[^\W\d_]+", text)
    glued = [r for r in runs if len(r) > 25]
    words = [w.lower() for w in runs if len(w) >= 3]
    unknown = [w for w in words if w not in ref["vocab"]]
    ref_abstract = [s for s in ref["abstract"] if len(norm(s)) >= MIN_CHARS]
    ours_abstract = [s for s in abstract if len(norm(s)) >= MIN_CHARS]
    numbers, footers = printed_margins(pdf)
    row = {
        "pdf": pdf.name, "reader": name, "pages": n_pages,
        "tei_body_sentences": len(ref["body"]), "reader_body_sentences": len(body),
        "recall": round(recall, 3), "precision": round(precision, 3),
        "recall_citations_aside": round(recall_nc, 3), "precision_citations_aside": round(precision_nc, 3),
        "numbered_headings": f"{hits}/{len(ref['heads'])}",
        "headings_missed": missed,
        "title_right": (norm(paper.title or "") == norm(ref["title"])) if structured else None,
        "references": (f"{sum(p.heading == 'References' for p in paper.paragraphs)}/{ref['n_references']}"
                       if structured else None),
        "abstract_sentences": None if not structured else
        f"{sum(norm(s) in norm(' '.join(ref_abstract)) for s in ours_abstract)}/{len(ours_abstract)} ours in "
        f"GROBID's, {sum(norm(s) in norm(' '.join(ours_abstract)) for s in ref_abstract)}/{len(ref_abstract)} "
        f"GROBID's in ours",
        "abstract_missed": [s for s in ref_abstract if norm(s) not in norm(" ".join(ours_abstract))],
        "glued_share": round(len(glued) / max(1, len(runs)), 4), "glued_examples": glued[:5],
        "unknown_word_share": round(len(unknown) / max(1, len(words)), 4), "unknown_examples": unknown[:10],
        "pages_per_s": round(n_pages / statistics.median(times), 1),
    }
    if structured:
        row["left_out_first_3_pages"] = left_out(pdf, 3, backend="pdfminer" if read is read_ours_pdfminer else "pdfium")
        row["offenders"] = offenders(body, ref, numbers, footers)
        row["unmatched_sentences"] = [s[:120] for s in body if norm_nocite(s) not in ref["body_nocite"]]
        row["missed_sentences"] = [s[:120] for s in ref["body"] if norm_nocite(s) not in ours_nocite]
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only-ours", action="store_true")
    args = parser.parse_args()
    nlp = spacy.blank("en")
    rows = []
    for pdf in sorted((args.data / "paper-pdfs").glob("*.pdf")):
        ref = tei_reference(tei_path(args.data, pdf), nlp)
        n_pages = _pages(pdf)
        for name, read in READERS.items():
            if args.only_ours and read not in (read_ours, read_ours_pdfminer):
                continue
            rows.append(score(nlp, name, read, pdf, ref, n_pages))
    brief = ("pdf", "reader", "recall", "precision", "recall_citations_aside", "precision_citations_aside",
             "numbered_headings", "title_right", "abstract_sentences", "references",
             "glued_share", "unknown_word_share", "pages_per_s")
    print("| " + " | ".join(brief) + " | offenders |")
    print("|" + " --- |" * (len(brief) + 1))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in brief) + f" | {len(row.get('offenders', [])) if 'offenders' in row else '–'} |")
    for row in rows:
        if "offenders" in row:
            print(f"\n{row['pdf']}: headings missed {row['headings_missed']}; abstract sentences missed "
                  f"{row['abstract_missed']}; offenders:")
            for item in row["offenders"]:
                print("  ", item)
            print("  left out of the body on pages 1-3:", {k: len(v) for k, v in row["left_out_first_3_pages"].items()})
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
