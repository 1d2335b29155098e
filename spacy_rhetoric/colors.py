"""One colour per label, for displaCy and the HTML views (``render``,
``align --html``): the coarse functions, the fine schemes the pipelines carry
(CoreSC concepts, Argumentative Zoning zones) and the section categories,
each family in hues of its coarse function so a fine label reads as a shade
of the coarse one.

displaCy draws every span label in one grey unless it is given colours::

    from spacy import displacy
    from spacy_rhetoric import displacy_options
    displacy.render(doc, style="span", options=displacy_options())
    displacy.render(doc, style="span", options=displacy_options("rhetoric_fine"))
"""
from typing import Dict, Iterable, Optional

# coarse functions (doc.spans["rhetoric"])
COARSE_COLORS = {
    "background": "#a6cee3",
    "objective": "#fdbf6f",
    "method": "#b2df8a",
    "result": "#fb9a99",
    "other": "#d9d9d9",
}
# CoreSC concepts (short and long names): blues background, oranges aims, greens method, reds results
CORESC_COLORS = {
    "Bac": "#a6cee3", "Mot": "#c6dbef", "Hyp": "#fdd0a2", "Goa": "#fdbf6f", "Obj": "#fdae6b",
    "Mod": "#c7e9c0", "Exp": "#b2df8a", "Met": "#a1d99b", "Obs": "#fcbba1", "Res": "#fb9a99",
    "Con": "#fc9272",
}
CORESC_NAMES = {"Bac": "Background", "Mot": "Motivation", "Hyp": "Hypothesis", "Goa": "Goal", "Obj": "Object",
                "Mod": "Model", "Exp": "Experiment", "Met": "Method", "Obs": "Observation", "Res": "Result",
                "Con": "Conclusion"}
# Argumentative Zoning zones
AZ_COLORS = {
    "BKG": "#a6cee3", "OTH": "#9ecae1", "CTR": "#6baed6", "BAS": "#c6dbef",
    "AIM": "#fdbf6f", "OWN": "#b2df8a", "TXT": "#e0e0e0",
}
# section categories (doc.spans["sections"])
SECTION_COLORS = {
    "title": "#f0f0f0", "abstract": "#fee8c8", "introduction": "#deebf7", "related_work": "#c6dbef",
    "method": "#e5f5e0", "results": "#fde0dd", "conclusion": "#fcc5c0", "other": "#eeeeee",
    "back_matter": "#e0e0e0", "body": "#f7f7f7", "unknown": "#ffffff",
}

LABEL_COLORS: Dict[str, str] = {
    **SECTION_COLORS,
    **COARSE_COLORS,
    **CORESC_COLORS,
    **{CORESC_NAMES[k]: v for k, v in CORESC_COLORS.items()},
    **AZ_COLORS,
}
# labels outside the tables take these in order of appearance
PALETTE = ("#cab2d6", "#ffff99", "#8dd3c7", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
           "#bc80bd", "#ccebc5", "#ffed6f", "#1f78b4", "#33a02c", "#e31a1c", "#ff7f00", "#6a3d9a")
NO_LABEL = "unlabelled"
NO_LABEL_COLOR = "#ffffff"


def label_colors(labels: Iterable[str], colors: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """A colour per label: ``colors`` first, then LABEL_COLORS, then PALETTE."""
    out: Dict[str, str] = {}
    given = dict(LABEL_COLORS, **(colors or {}))
    spare = iter(PALETTE * 8)
    for label in labels:
        if label not in out:
            out[label] = NO_LABEL_COLOR if label == NO_LABEL else given.get(label) or next(spare)
    return out


def displacy_options(spans_key: str = "rhetoric", colors: Optional[Dict[str, str]] = None) -> Dict[str, object]:
    """Options for ``displacy.render(doc, style="span", options=...)``: the
    span group to draw (``"rhetoric"``: coarse functions; the fine
    classifier's group; ``"sections"``) and a colour for every label the
    project knows (``colors`` added or overriding)."""
    return {"spans_key": spans_key, "colors": dict(LABEL_COLORS, **(colors or {}))}
