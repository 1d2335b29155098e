"""FeRoSA section headings (Chakraborty et al. 2016): 25,482 headings, each
with the facet of the section it opens; the heading set COSAEMB (§3.5) draws
its section categories from.

File: ``section_mapping.tsv`` (header ``heading<TAB>label``; the shared data
export of the original ``section_mapping.ods``). Facets and the section
category each one becomes (``FACET_CATEGORIES``):

=========  ===========================================  ===============
facet      what the FeRoSA README / data hold             category
=========  ===========================================  ===============
``I``      introduction                                  introduction
``RW``     related work / background                     related work
``M``      method (also every topic-specific heading)    method
``MM``     one stray row ("Query language"), a typo of M  method
``RE``     results / experiments / evaluation            results
``C``      conclusion                                    conclusion
(empty)    acknowledgements, references and junk         other
``E``      one stray row ("Discussions & Conclusions");   (dropped)
           ambiguous between RE and C
=========  ===========================================  ===============
"""
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from .common import ReaderError

FACET_CATEGORIES: Dict[str, Optional[str]] = {
    "I": "introduction",
    "RW": "related work",
    "M": "method",
    "MM": "method",
    "RE": "results",
    "C": "conclusion",
    "": "other",
    "E": None,  # dropped
}


def read_ferosa_headings(path: Union[str, Path]) -> Tuple[List[Tuple[str, str]], Counter]:
    """``(heading, category)`` pairs of the FeRoSA TSV in file order, and a
    Counter of what was dropped (``facet E``, ``empty heading``). An unknown
    facet or a line without a tab raises a ReaderError naming the line."""
    path = Path(path)
    pairs: List[Tuple[str, str]] = []
    dropped: Counter = Counter()
    with path.open(encoding="utf8") as f:
        for line_no, line in enumerate(f, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if line_no == 1 and line.lower().startswith("heading\t"):
                continue
            if not line.strip():
                continue
            if "\t" not in line:
                raise ReaderError(path, line_no, "expected 'heading<TAB>facet'")
            heading, facet = line.rsplit("\t", 1)
            facet = facet.strip()
            if facet not in FACET_CATEGORIES:
                raise ReaderError(path, line_no, f"unknown facet {facet!r}", field="label")
            category = FACET_CATEGORIES[facet]
            if category is None:
                dropped[f"facet {facet}"] += 1
            elif not heading.strip():
                dropped["empty heading"] += 1
            else:
                pairs.append((heading.strip(), category))
    return pairs, dropped
