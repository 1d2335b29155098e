"""The reading probes (rows of the hostile table of ``bad_input.py``; also
alone: ``--only-reading``): reading and showing -- a model folder that asks to
run its own code, escape sequences in paper text, a runaway section rule, a
tampered pipeline config, a Chinese paper, text that begins with "<", a PDF
with a 250-byte name through GROBID, a folder with files that are not papers.
"""
import re
import shutil
from pathlib import Path
from typing import Callable, List, Tuple

from bad_input_common import GOOD_TEXT, TEI, Check, StubServer, docbin_count, index_inputs, make_model, run, run_timed

ESCAPES = "We propose \x1b]0;pwned\x07\x1b[2J a method. It works."
ZH_PAPER = "标题\n\n摘要\n\n本文提出了一种新方法。结果很好。\n\n1 引言\n\n近年来进展很大。"
TEI_ANSWER = ('<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>T</title>'
              '</titleStmt></fileDesc></teiHeader><text><body><div><head>Introduction</head>'
              '<p>We propose a method. It works.</p></div></body></text></TEI>').encode()


def make_tagged_model(path: Path, patterns: List[str]) -> None:
    """make_model's pipeline with a section tagger whose rules start with ``patterns``."""
    import json

    import spacy

    import spacy_rhetoric  # noqa: F401

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_section_tagger")
    clf = nlp.add_pipe("rhetoric_function_classifier")
    for label in ("background", "objective", "result"):
        clf.add_label(label)
    nlp.initialize()
    nlp.to_disk(path)
    rules = path / "rhetoric_section_tagger" / "rules.json"
    data = json.loads(rules.read_text(encoding="utf8"))
    data["rules"] = [{"category": "method", "pattern": p} for p in patterns] + data["rules"]
    rules.write_text(json.dumps(data), encoding="utf8")


def tampered_model(w: Path, name: str, old: str, new: str) -> None:
    shutil.copytree(w / "model", w / name)
    config = (w / name / "config.cfg").read_text(encoding="utf8")
    (w / name / "config.cfg").write_text(config.replace(old, new, 1), encoding="utf8")


def setup_reading(w: Path) -> None:
    """The scratch files of the reading probes (READ_ITEMS)."""
    import json

    evil = w / "evil_model"
    evil.mkdir()
    auto_map = {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel",
                "AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}
    (evil / "config.json").write_text(json.dumps({"auto_map": auto_map}), encoding="utf8")
    for name in ("configuration_evil", "modeling_evil", "tokenization_evil"):
        (evil / f"{name}.py").write_text(f"open({str(w / 'CODE_RAN')!r}, 'w').write('ran')\n", encoding="utf8")
    (w / "esc_in").mkdir()
    (w / "esc_in" / "esc.txt").write_text(ESCAPES + "\n", encoding="utf8")
    run(["index", "model", "esc_in", "-o", "esc.index"], w)
    make_tagged_model(w / "rules_slow", [r"^(a|aa)+$"])
    make_tagged_model(w / "rules_nested", [r"^(a+)+$"])
    (w / "aaa.txt").write_text("1 A" + "a" * 60 + "b\n\nWe propose a method. It works.\n", encoding="utf8")
    width = next(line for line in (w / "model" / "config.cfg").read_text().splitlines() if line.startswith("width"))
    tampered_model(w, "wide_model", width, "width = 1000000000000")
    tampered_model(w, "lang_model", 'lang = "en"', 'lang = "../../etc/x"')
    (w / "zh.txt").write_text(ZH_PAPER, encoding="utf8")
    (w / "bold_in").mkdir()
    (w / "bold_in" / "bold.txt").write_text("<b>Bold</b> claims. We propose a method.", encoding="utf8")
    (w / "bold.xml").write_text("<b>Bold</b> claims. We propose a method.", encoding="utf8")
    (w / "longname").mkdir()
    (w / "longname" / ("p" * 250 + ".pdf")).write_bytes(b"%PDF-1.4\n%stand-in\n")
    mixed = w / "mixed"
    mixed.mkdir()
    (mixed / "paper.txt").write_text(GOOD_TEXT + "\n", encoding="utf8")
    (mixed / "README.md").write_text("# Corpus\n\nThese are the papers of our study.\n", encoding="utf8")
    (mixed / "LICENSE").write_text("Permission is hereby granted, free of charge.\n", encoding="utf8")
    (mixed / "scores.csv").write_text("paper,score\npaper.txt,0.5\nother.txt,0.7\n", encoding="utf8")
    (mixed / "figure.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)


def no_escapes(out: str) -> bool:
    return not any(seq in out for seq in ("\x1b]0;", "\x07", "\x1b[2J"))


def zh_sentences(w: Path) -> bool:
    import spacy
    from spacy.tokens import DocBin

    if not (w / "zh.spacy").exists():
        return False
    doc = next(DocBin(store_user_data=True).from_disk(w / "zh.spacy").get_docs(spacy.blank("en").vocab))
    return [s.text for s in doc.sents] == ["标题", "本文提出了一种新方法。", "结果很好。", "近年来进展很大。"]


class _TeiServer(StubServer):
    """A stand-in GROBID server in a thread that answers every POST with TEI_ANSWER."""

    def __init__(self):
        super().__init__(self.answer)

    @staticmethod
    def answer(handler) -> None:
        handler.send_response(200)
        handler.end_headers()
        handler.wfile.write(TEI_ANSWER)


READ_ITEMS = ("code", "terminal", "rules", "pipeline", "CJK", "sniffing", "names", "not papers")


def reading_probes(tmp: Path) -> List[Tuple[str, str, List[str], int, Check, Callable[[str], bool]]]:
    """(item, probe, argv, expected exit code, check of the files, check of the output)."""
    grobid = _TeiServer()
    any_out: Callable[[str], bool] = lambda out: True  # noqa: E731
    short = lambda out: len([x for x in out.splitlines() if x.strip()]) <= 6  # noqa: E731
    return [
        ("code", "evaluate raw:FOLDER whose config.json has an auto_map (stdin: y)",
         ["evaluate", "raw:evil_model", "X.spacy"], 1, lambda w: not (w / "CODE_RAN").exists(), short),
        ("terminal", "align: a paper with ESC ]0; BEL ESC [2J", ["align", "esc_in/esc.txt", "esc_in/esc.txt", "-m",
                                                                   "model"], 0, lambda w: True, no_escapes),
        ("terminal", "search: the same sentence in the table", ["search", "esc.index", "We propose a method."], 0,
         lambda w: True, no_escapes),
        ("rules", "render: a rules.json rule ^(a|aa)+$ and a 62-letter heading",
         ["render", "aaa.txt", "-m", "rules_slow", "-o", "rules_slow.html"], 1,
         lambda w: not (w / "rules_slow.html").exists(), lambda out: "^(a|aa)+$" in out),
        ("rules", "render: a rules.json rule ^(a+)+$ and a 62-letter heading",
         ["render", "aaa.txt", "-m", "rules_nested", "-o", "rules_nested.html"], 0,
         lambda w: (w / "rules_nested.html").exists(), any_out),
        ("pipeline", "render: a pipeline whose config says width = 10^12",
         ["render", "p.tei.xml", "-m", "wide_model", "-o", "wide.html"], 1, lambda w: True, short),
        ("pipeline", "align: a pipeline whose config says lang = ../../etc/x",
         ["align", "p.tei.xml", "p.tei.xml", "-m", "lang_model"], 1, lambda w: True, short),
        ("CJK", "convert text: a Chinese paper (4 sentences, 2 headings)", ["convert", "text", "zh.txt", "zh.spacy"], 0,
         zh_sentences, any_out),
        ("sniffing", "convert auto: a .txt that begins with <b>", ["convert", "auto", "bold_in", "bold.spacy"], 0,
         lambda w: docbin_count(w / "bold.spacy") == 1, any_out),
        ("sniffing", "render --format text: a .xml that is text", ["render", "bold.xml", "-m", "model", "-o",
                                                                   "bold.html", "--format", "text"], 0,
         lambda w: "We propose a method." in (w / "bold.html").read_text(encoding="utf8")
         if (w / "bold.html").exists() else False, any_out),
        ("names", "convert pdf --grobid: a PDF with a 250-byte stem",
         ["convert", "pdf", "longname", "longname.spacy", "--grobid", grobid.url], 0,
         lambda w: docbin_count(w / "longname.spacy") == 1, any_out),
        ("not papers", "annotate a folder: a paper, README, LICENSE, CSV, PNG",
         ["annotate", "model", "mixed", "-o", "mixed_out"], 0,
         lambda w: summary_of_inputs(w / "mixed_out") == (1, 4), any_out),
        ("not papers", "index the same folder", ["index", "model", "mixed", "-o", "mixed.index"], 0,
         lambda w: index_inputs(w / "mixed.index") == {"paper.txt"}, any_out),
    ]


def summary_of_inputs(out: Path) -> Tuple[int, int]:
    import json

    path = out / "summary.json"
    summary = json.loads(path.read_text(encoding="utf8")) if path.exists() else {}
    return summary.get("inputs_annotated", -1), summary.get("inputs_skipped", -1)


def run_reading_probes(tmp: Path) -> Tuple[int, int]:
    """The reading rows of the hostile table (setup included); (OK, probes)."""
    setup_reading(tmp)
    n_ok = 0
    probes = reading_probes(tmp)
    for item, name, argv, expected, check, seen_ok in probes:
        code, seen, seconds, out = run_timed(argv, tmp, stdin="y\n")
        ok = code == expected and "Traceback" not in out and check(tmp) and seen_ok(out)
        n_ok += ok
        shown = " ".join(a if len(a) < 40 else "…/" + Path(a).name[:20] + "…" for a in argv)
        print(f"| {item} | {name} | `{shown}` | {printable_cell(seen)} | {code} | {seconds:.1f} | "
              f"{'OK' if ok else 'NOT OK'} |")
    return n_ok, len(probes)


def printable_cell(text: str) -> str:
    """A table cell: '|' and control characters shown, never obeyed."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", text.replace("|", "/"))


def run_read_only(tmp: Path) -> None:
    """Only the reading probes (``--only-reading``)."""
    make_model(tmp / "model")
    (tmp / "p.tei.xml").write_text(TEI.format(title="A paper", body=GOOD_TEXT), encoding="utf8")
    import spacy
    from spacy.tokens import DocBin

    from spacy_rhetoric.readers.common import doc_from_sentences

    DocBin(docs=[doc_from_sentences(spacy.blank("en"), ["We parse.", "It works."], labels=["objective", "result"])],
           store_user_data=True).to_disk(tmp / "X.spacy")
    print("| item | probe | command | what the user sees | exit | s | OK |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    n_ok, n = run_reading_probes(tmp)
    print(f"\n{n_ok} of {n} probes OK.")
