"""Corpus readers (one module per corpus; formats in ../shared/data/README.md).

* ``common``: ``doc_from_sentences`` (one Doc with exactly the given
  sentences, gold labels/sections/sids/doc id via ``extensions``), JSON-lines
  iteration with ``file:line`` errors, ``ReadStats`` skip-and-count summaries.
* ``csabstruct``, ``pmc``, ``citation_intent`` (SciCite, ACL-ARC),
  ``clscisumm`` (reference-paper XML, annotation files, topics),
  ``phrases`` (labelled phrase lists).
* ``label_inputs``: the input formats of ``spacy-rhetoric label`` (``.xml``,
  ``.txt``, ``.jsonl``, ``.spacy`` papers as sentence lists).
* ``corpora``: the registered ``[corpora]`` readers
  ``spacy_rhetoric.{CSAbstruct,PMCSents,CitationIntent,SciSumm,Sentence}Corpus.v1``.
* ``splits``: document-disjoint train/test splits of a corpus (optionally
  stratified by label): ``spacy-rhetoric split``, ``label``, the section corpora.

Modules are imported on use (spaCy finds the registered readers through the
``spacy_readers`` entry points), so importing this package stays cheap.
"""
