"""HTML views of annotated papers: one self-contained page (inline CSS and
JS, nothing fetched from the network).

:func:`render_paper` shows papers by section, every sentence coloured by its
coarse function label, with a legend and a tooltip (label scores, fine
function, phrase evidence, section). :func:`render_alignment` shows two papers
side by side, each sentence of A linked to its aligned sentence(s) of B
(``alignment.align_encoded``).

Labels are read as displaCy's ``style="span"`` reads them: the span group
``doc.spans["rhetoric"]`` (one span per sentence, its label the coarse
function, ``attrs["scores"]`` the label's probability), with the
extension values (``sent._.rhetoric_label``/``rhetoric_scores``) as fallback
and for the full score table. ``colors`` maps labels to CSS colours as in
displaCy's options.

Every sentence is a ``<span class="rh-sent">`` with ``data-index``,
``data-label``, ``data-fine-label``, ``data-section``, ``data-scores`` (JSON),
``data-phrase`` and ``data-phrase-label`` attributes (empty attributes left
out), so the page can be checked and scripted; the script sets
``data-rh-ready="1"`` on ``<body>`` once the handlers are in place.
"""
import html
import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from spacy.tokens import Doc

from .. import extensions as ext
from ..colors import COARSE_COLORS, NO_LABEL, label_colors
from .records import doc_records

DEFAULT_COLORS = COARSE_COLORS

CSS = """
body{font:16px/1.55 Georgia,'Times New Roman',serif;margin:0;color:#222;background:#fafafa}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:.6em 1.2em;z-index:2}
header h1{font-size:1.2em;margin:0 0 .3em}
.rh-legend{display:flex;flex-wrap:wrap;gap:.4em .9em;font:13px/1.4 system-ui,sans-serif}
.rh-legend-item{cursor:pointer;user-select:none;white-space:nowrap}
.rh-legend-item i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em;border:1px solid #999}
.rh-legend-item.rh-off{opacity:.35}
main{max-width:52em;margin:0 auto;padding:1em 1.2em 4em}
main.rh-cols{max-width:none;display:grid;grid-template-columns:1fr 1fr;gap:2em}
.rh-paper h1{font-size:1.35em}
.rh-section h2{font:600 1.02em system-ui,sans-serif;margin:1.4em 0 .4em;color:#444}
.rh-cat{font-weight:400;color:#888}
.rh-sent{border-radius:3px;padding:.05em .1em;box-decoration-break:clone;-webkit-box-decoration-break:clone}
.rh-sent:hover,.rh-sent.rh-hit{outline:2px solid #333}
.rh-sent.rh-dim{background:transparent!important}
.rh-link{font:11px system-ui,sans-serif;color:#555;text-decoration:none;margin-left:.2em}
.rh-tip{position:fixed;max-width:26em;background:#fff;border:1px solid #888;border-radius:4px;
box-shadow:0 2px 8px rgba(0,0,0,.2);padding:.5em .7em;font:12px/1.45 system-ui,sans-serif;z-index:3;pointer-events:none}
.rh-tip table{border-collapse:collapse;margin-top:.3em}.rh-tip td{padding:0 .5em 0 0}
.rh-tip .rh-bar{display:inline-block;height:.6em;background:#666}
"""

JS = """
(function(){
var tip=document.getElementById('rh-tip');
function esc(s){var d=document.createElement('div');d.textContent=s;return d.innerHTML;}
function show(el,ev){
  var d=el.dataset,h='<b>'+esc(d.label||'unlabelled')+'</b>';
  if(d.fineLabel)h+='<br>fine: '+esc(d.fineLabel);
  if(d.section)h+='<br>section: '+esc(d.section);
  if(d.phrase)h+='<br>phrase: \\u201c'+esc(d.phrase)+'\\u201d'+(d.phraseLabel?' ('+esc(d.phraseLabel)+')':'');
  if(d.match)h+='<br>aligned: '+esc(d.match);
  if(d.scores){var s=JSON.parse(d.scores),k=Object.keys(s).sort(function(a,b){return s[b]-s[a];});
    h+='<table>';k.forEach(function(l){h+='<tr><td>'+esc(l)+'</td><td>'+s[l].toFixed(3)+'</td><td><span class="rh-bar" style="width:'+
      Math.round(60*s[l])+'px"></span></td></tr>';});h+='</table>';}
  tip.innerHTML=h;tip.hidden=false;move(ev);}
function move(ev){var x=ev.clientX+14,y=ev.clientY+14,r=tip.getBoundingClientRect();
  if(x+r.width>innerWidth)x=Math.max(0,ev.clientX-r.width-10);if(y+r.height>innerHeight)y=Math.max(0,ev.clientY-r.height-10);
  tip.style.left=x+'px';tip.style.top=y+'px';}
function targets(el){return (el.dataset.targets||'').split(' ').filter(Boolean).map(function(i){return document.getElementById(i);}).filter(Boolean);}
function mark(el,on){targets(el).forEach(function(t){t.classList.toggle('rh-hit',on);if(on)t.scrollIntoView({block:'nearest'});});}
document.querySelectorAll('.rh-sent').forEach(function(el){
  el.addEventListener('mouseenter',function(ev){show(el,ev);mark(el,true);});
  el.addEventListener('mousemove',move);
  el.addEventListener('mouseleave',function(){tip.hidden=true;mark(el,false);});});
document.querySelectorAll('.rh-legend-item').forEach(function(item){
  item.addEventListener('click',function(){var off=item.classList.toggle('rh-off');
    document.querySelectorAll('.rh-sent[data-label="'+item.dataset.label+'"]').forEach(function(s){s.classList.toggle('rh-dim',off);});});});
document.body.setAttribute('data-rh-ready','1');
})();
"""


def sentence_records(doc: Doc, *, spans_key: str = ext.SPANS_KEY) -> List[Dict[str, Any]]:
    """What the views show of each sentence of ``doc`` (whitespace-only ones left out)."""
    group = doc.spans[spans_key] if spans_key in doc.spans else None
    by_offsets: Dict[tuple, tuple] = {}
    if group is not None:
        probs = group.attrs.get("scores")
        for i, span in enumerate(group):
            p = float(probs[i]) if probs is not None and i < len(probs) else None
            by_offsets[(span.start_char, span.end_char)] = (span.label_, p)
    out = []
    for rec in doc_records(doc, skip_blank=True):
        label, prob = by_offsets.get((rec["start_char"], rec["end_char"]), (rec["label"], None))
        out.append({
            "index": rec["index"], "text": rec["text"], "label": label,
            "scores": rec["scores"] or ({label: prob} if label and prob is not None else {}),
            "fine_label": rec["fine_label"], "fine_scores": rec["fine_scores"] or {},
            "section": rec["section"] or rec["heading"], "heading": rec["heading"], "paragraph": rec["paragraph"],
            "phrase_label": rec["phrase_label"], "phrase": rec["phrase_ngram"], "sid": rec["sid"],
        })
    return out


def has_labels(doc: Doc, *, spans_key: str = ext.SPANS_KEY) -> bool:
    return any(r["label"] for r in sentence_records(doc, spans_key=spans_key))


def _attrs(values: Dict[str, Any]) -> str:
    parts = []
    for name, value in values.items():
        if value is None or value == "" or value == {}:
            continue
        if isinstance(value, dict):
            value = json.dumps({k: round(float(v), 4) for k, v in value.items()}, ensure_ascii=False)
        parts.append(f'{name}="{html.escape(str(value), quote=True)}"')
    return " ".join(parts)


def _sentence_html(rec: Dict[str, Any], colors: Dict[str, str], *, id_: Optional[str] = None,
                   extra: Optional[Dict[str, Any]] = None, suffix: str = "") -> str:
    label = rec["label"] or NO_LABEL
    attrs = _attrs({"class": "rh-sent", "id": id_, "data-index": rec["index"], "data-label": rec["label"],
                    "data-fine-label": rec["fine_label"], "data-section": rec["section"],
                    "data-scores": rec["scores"], "data-phrase": rec["phrase"],
                    "data-phrase-label": rec["phrase_label"], "data-sid": rec["sid"], **(extra or {})})
    return (f'<span {attrs} style="background-color:{colors[label]}">{html.escape(rec["text"])}</span>'
            f"{suffix} ")


def _paper_body(doc: Doc, records: List[Dict[str, Any]], colors: Dict[str, str], *, prefix: str = "",
                sentence_extra=None, sentence_suffix=None, show_title: bool = True) -> str:
    """Sections (consecutive sentences under one heading and section
    category) of paragraphs; each headed by the paper's own heading with the
    category beside it."""
    title = ext.get_doc_value(doc, ext.TITLE)
    paper_id = ext.get_doc_value(doc, ext.DOC_ID)
    out = [f'<article class="rh-paper" {_attrs({"data-paper": paper_id})}>']
    if show_title and (title or paper_id):
        out.append(f"<h1>{html.escape(str(title or paper_id))}</h1>")
    key, paragraph, in_section = None, None, False
    for rec in records:
        # one block per heading of the paper ("3 Extracting Metadata"), its category beside it
        if not in_section or (rec["heading"], rec["section"]) != key:
            if in_section:
                out.append("</p></section>")
            key, paragraph, in_section = (rec["heading"], rec["section"]), rec["paragraph"], True
            heading, section = key
            out.append(f'<section class="rh-section" {_attrs({"data-section": section, "data-heading": heading})}>')
            if heading and section and section != heading:
                out.append(f'<h2>{html.escape(heading)} <small class="rh-cat">[{html.escape(section)}]</small></h2>')
            elif heading or section:
                out.append(f"<h2>{html.escape(heading or section)}</h2>")
            out.append("<p>")
        elif rec["paragraph"] != paragraph:
            out.append("</p><p>")
            paragraph = rec["paragraph"]
        extra = sentence_extra(rec) if sentence_extra else None
        suffix = sentence_suffix(rec) if sentence_suffix else ""
        out.append(_sentence_html(rec, colors, id_=f"{prefix}{rec['index']}" if prefix else None,
                                  extra=extra, suffix=suffix))
    if in_section:
        out.append("</p></section>")
    out.append("</article>")
    return "\n".join(out)


def _legend(counts: Dict[str, int], colors: Dict[str, str]) -> str:
    items = [f'<span class="rh-legend-item" data-label="{html.escape(label, quote=True)}" title="click: dim/undim">'
             f'<i style="background:{colors[label]}"></i>{html.escape(label)} ({n})</span>'
             for label, n in counts.items()]
    return f'<div class="rh-legend">{"".join(items)}</div>'


def _page(title: str, legend: str, body: str, *, cols: bool = False) -> str:
    main_class = ' class="rh-cols"' if cols else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
        f"<header><h1>{html.escape(title)}</h1>{legend}</header>\n"
        f"<main{main_class}>\n{body}\n</main>\n"
        f'<div id="rh-tip" class="rh-tip" hidden></div>\n<script>{JS}</script>\n</body></html>\n'
    )


def _counts(records: Iterable[Dict[str, Any]], colors: Optional[Dict[str, str]]):
    counts: Dict[str, int] = {}
    for rec in records:
        label = rec["label"] or NO_LABEL
        counts[label] = counts.get(label, 0) + 1
    order = [lab for lab in DEFAULT_COLORS if lab in counts] + sorted(lab for lab in counts if lab not in DEFAULT_COLORS)
    counts = {lab: counts[lab] for lab in order}
    return counts, label_colors(counts, colors)


def render_paper(docs: Union[Doc, Sequence[Doc]], *, title: Optional[str] = None,
                 colors: Optional[Dict[str, str]] = None, spans_key: str = ext.SPANS_KEY) -> str:
    """One HTML page showing ``docs`` (annotated papers) by section, every
    sentence coloured by its label, with legend and tooltips."""
    docs = [docs] if isinstance(docs, Doc) else list(docs)
    per_doc = [sentence_records(doc, spans_key=spans_key) for doc in docs]
    counts, palette = _counts((r for recs in per_doc for r in recs), colors)
    if title is None:
        first = docs[0] if docs else None
        title = str(ext.get_doc_value(first, ext.TITLE) or ext.get_doc_value(first, ext.DOC_ID) or "Paper") \
            if first is not None else "Paper"
    # one paper: its title is the page's
    body = "\n".join(_paper_body(doc, recs, palette, show_title=len(docs) > 1)
                     for doc, recs in zip(docs, per_doc))
    return _page(title, _legend(counts, palette), body)


def render_alignment(paper_a, paper_b, alignments: Sequence[Any], *, title: Optional[str] = None,
                     colors: Optional[Dict[str, str]] = None, spans_key: str = ext.SPANS_KEY) -> str:
    """Two papers side by side (Docs or ``alignment.EncodedPaper``), each
    sentence of A linked to its aligned sentence(s) of B (``SentenceAlignment``
    objects or dicts with ``a_index``, ``b_index``, ``score``): an ``#b-N``
    link after the sentence, ``data-targets`` (ids in B) and ``data-match``;
    hovering a sentence highlights its partners. Sentence ids: ``a-N``, ``b-N``
    (N = sentence index in the Doc)."""
    doc_a, doc_b = getattr(paper_a, "doc", paper_a), getattr(paper_b, "doc", paper_b)
    recs_a = sentence_records(doc_a, spans_key=spans_key)
    recs_b = sentence_records(doc_b, spans_key=spans_key)
    get = lambda al, key: al[key] if isinstance(al, dict) else getattr(al, key)  # noqa: E731
    forward: Dict[int, List[tuple]] = {}
    backward: Dict[int, List[int]] = {}
    for al in alignments:
        a, b, score = int(get(al, "a_index")), int(get(al, "b_index")), float(get(al, "score"))
        forward.setdefault(a, []).append((b, score))
        backward.setdefault(b, []).append(a)
    counts, palette = _counts(recs_a + recs_b, colors)

    def a_extra(rec):
        pairs = forward.get(rec["index"], [])
        return {"data-targets": " ".join(f"b-{b}" for b, _ in pairs),
                "data-match": ", ".join(f"B{b} ({s:.3f})" for b, s in pairs)}

    def a_suffix(rec):
        return "".join(f'<a class="rh-link" href="#b-{b}" title="cosine {s:.3f}">&rarr;B{b}</a>'
                       for b, s in forward.get(rec["index"], []))

    def b_extra(rec):
        sources = backward.get(rec["index"], [])
        return {"data-targets": " ".join(f"a-{a}" for a in sources),
                "data-match": ", ".join(f"A{a}" for a in sources)}

    body = (f'<div class="rh-col" data-side="A">{_paper_body(doc_a, recs_a, palette, prefix="a-", sentence_extra=a_extra, sentence_suffix=a_suffix)}</div>\n'
            f'<div class="rh-col" data-side="B">{_paper_body(doc_b, recs_b, palette, prefix="b-", sentence_extra=b_extra)}</div>')
    name = lambda p, d: getattr(p, "name", None) or ext.get_doc_value(d, ext.DOC_ID) or "paper"  # noqa: E731
    title = title or f"{Path(str(name(paper_a, doc_a))).name} \u2194 {Path(str(name(paper_b, doc_b))).name}"
    return _page(title, _legend(counts, palette), body, cols=True)
