"""The identity of a pipeline the project writes (``meta.json``): its own
name, version, description, author, licence, training sources, scores and
the packages ``spacy.load`` needs. ``apps/assemble.py`` sets it for
``assemble``, ``demo`` and the ``spacy project`` workflows
(:func:`pipeline_meta`); ``spacy package`` builds ``{lang}_{name}`` from it.

- ``SOURCES``: the one table of what a pipeline can learn from, corpus or
  model -> name, url, licence, author, citation (as ``../shared/data``'s
  README states them). A pipeline's sources are the corpora its trained
  components learned from (the caller names them: ``training``), the data
  behind its fixed components (``COMPONENT_SOURCES``: the phrase list of
  ``rhetoric_phrase_labeler``, the FeRoSA headings of the section tagger's
  heading model), the base models its config names (``MODEL_SOURCES``), and
  the parser with the sources its own meta lists.
- The licence (:func:`combined_licence`) is the strictest family among the
  sources that state one, from most to least restrictive: any CC BY-NC
  source -> ``CC BY-NC 4.0`` (``CC BY-NC-SA 4.0`` when a share-alike source is
  there too); else any share-alike source -> ``CC BY-SA 4.0`` (MuLMS-AZ's
  CC BY-SA 4.0; AZ-CL's CC BY-SA 3.0 allows later versions); else any CC BY
  source -> ``CC BY 4.0``; else ``Apache-2.0`` or ``MIT``. Sources that state
  no licence are listed as such and named in the description.
- ``performance``: the scores spaCy wrote for the trained components
  (:func:`rhetoric_scores`: keys ``rhetoric_*`` and ``encoder_*``, no
  losses), never the parser's.
- ``requirements`` (:func:`load_requirements`): spacy_rhetoric at least this
  version, and torch, transformers and spacy-transformers (plus
  sentence-transformers for ``rhetoric_citance_linker``) pinned as
  spacy_rhetoric's own requirements pin them (its installed metadata, i.e.
  ``setup.py``). No weights package: the fine-tuned member is stored whole
  inside the pipeline (``ml/finetuned_io.py``).
"""
from typing import Any, Dict, Iterable, List, Optional, Sequence

from .errors import RhetoricError

NONE_STATED = "none stated"
AUTHOR = "spacy_rhetoric"
SOURCES: Dict[str, Dict[str, str]] = {
    "csabstruct": {
        "name": "CSAbstruct", "url": "https://github.com/allenai/sequential_sentence_classification",
        "license": "Apache-2.0", "author": "Arman Cohan, Iz Beltagy, Daniel King, Bhavana Dalvi, Daniel S. Weld",
        "citation": "Cohan et al. (2019), Pretrained Language Models for Sequential Sentence Classification, "
                    "EMNLP-IJCNLP"},
    "mulms-az": {
        "name": "MuLMS-AZ", "url": "https://github.com/boschresearch/mulms-az-codi2023", "license": "CC BY-SA 4.0",
        "author": "Timo Pierre Schrader, Teresa Bürkle, Sophie Henning, Sherry Tan, Matteo Finco, Stefan Grünewald, "
                  "Maira Indrikova, Felix Hildebrand, Annemarie Friedrich",
        "citation": "Schrader et al. (2023), MuLMS-AZ: An Argumentative Zoning Dataset for the Materials Science "
                    "Domain, CODI workshop"},
    "az-cl": {
        "name": "Argumentative Zoning corpus (AZ-CL)", "url": "https://github.com/WING-NUS/RAZ",
        "license": "CC BY-SA 3.0", "author": "Simone Teufel",
        "citation": "Teufel (1999), Argumentative Zoning: Information Extraction from Scientific Text; "
                    "Teufel & Moens (2002), Computational Linguistics 28(4)"},
    "coresc-art": {
        "name": "ART / CoreSC corpus", "url": "https://github.com/kermitt2/hypothesis_detection",
        "license": "CC BY-NC", "author": "Maria Liakata et al., Aberystwyth University",
        "citation": "Liakata et al. (2010), Corpora for the conceptualisation and zoning of scientific papers, LREC"},
    "cl-scisumm": {
        "name": "CL-SciSumm", "url": "https://github.com/WING-NUS/scisumm-corpus", "license": "CC BY 4.0",
        "author": "Kokil Jaidka, Muthu Kumar Chandrasekaran, Min-Yen Kan et al. (WING-NUS)",
        "citation": "Jaidka et al., The CL-SciSumm Shared Task (BIRNDL workshops 2016-2019)"},
    "iwatsuki2021": {
        "name": "Formulaic expression database, CL discipline",
        "url": "https://github.com/YingyiZhang/sentence-extraction-from-scientific-paper", "license": NONE_STATED,
        "author": "Kenichi Iwatsuki, Akiko Aizawa",
        "citation": "Iwatsuki & Aizawa (2021), Communicative-Function-Based Sentence Classification for Construction "
                    "of an Academic Formulaic Expression Database, EACL"},
    "ferosa": {
        "name": "FeRoSA section headings", "url": "https://github.com/chittorakalpit/FeRoSA_new",
        "license": NONE_STATED, "author": "Tanmoy Chakraborty et al.",
        "citation": "Chakraborty et al. (2016), FeRoSA: A Faceted Recommendation System for Scientific Articles, "
                    "PAKDD"},
    "all-minilm-l6-v2": {
        "name": "all-MiniLM-L6-v2", "url": "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
        "license": "Apache-2.0", "author": "Nils Reimers et al. (sentence-transformers)",
        "citation": "Reimers & Gurevych (2019), Sentence-BERT, EMNLP-IJCNLP; Wang et al. (2020), MiniLM"},
}
COMPONENT_SOURCES = {"rhetoric_phrase_labeler": ("iwatsuki2021",), "rhetoric_section_tagger": ("ferosa",)}
MODEL_SOURCES = {"all-MiniLM-L6-v2": "all-minilm-l6-v2"}  # a base model the config names -> its source
LOAD_PACKAGES = ("torch", "transformers", "spacy-transformers")
COMPONENT_PACKAGES = {"rhetoric_citance_linker": ("sentence-transformers",)}
SCORE_PREFIXES = ("rhetoric_", "encoder_")


def source_entry(key: str) -> Dict[str, str]:
    """``SOURCES[key]`` as a meta.json source (name, url, license, author, citation)."""
    if key not in SOURCES:
        raise RhetoricError(f"unknown training source {key!r}: one of {sorted(SOURCES)} (spacy_rhetoric.meta.SOURCES)")
    return dict(SOURCES[key])


def combined_licence(licences: Iterable[str]) -> str:
    """The licence of a pipeline learned from sources with ``licences``
    (module docstring: the strictest family; unstated ones do not count)."""
    stated = [str(x) for x in licences if x and x != NONE_STATED]
    terms = [set(x.replace("-", " ").split()) for x in stated]  # "CC BY-NC-SA 4.0" -> {CC, BY, NC, SA, 4.0}
    nc, sa = any("NC" in t for t in terms), any("SA" in t for t in terms)
    if nc:
        return "CC BY-NC-SA 4.0" if sa else "CC BY-NC 4.0"
    if sa:
        return "CC BY-SA 4.0"
    if any(x.startswith("CC BY") for x in stated):
        return "CC BY 4.0"
    return "Apache-2.0" if any(x.startswith("Apache") for x in stated) else "MIT"


def rhetoric_scores(performance: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The trained components' scores of a spaCy ``performance`` dict: keys
    ``rhetoric_*`` / ``encoder_*`` that are not losses."""
    return {k: v for k, v in (performance or {}).items()
            if k.startswith(SCORE_PREFIXES) and not k.endswith("_loss") and v is not None}


def project_pins() -> Dict[str, str]:
    """spacy_rhetoric's own requirements (its installed metadata, extras
    included), normalised name -> requirement without its marker; empty
    when spacy_rhetoric is not installed as a distribution."""
    import importlib.metadata

    from packaging.requirements import Requirement

    try:
        requires = importlib.metadata.requires("spacy_rhetoric") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    pins = {}
    for text in requires:
        req = Requirement(text)
        pins[_norm(req.name)] = f"{req.name}{req.specifier}"
    return pins


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def load_requirements(factories: Iterable[str]) -> List[str]:
    """What ``spacy.load`` of a pipeline with components of ``factories``
    needs besides spaCy (module docstring)."""
    from .about import __version__

    pins = project_pins()
    names = list(LOAD_PACKAGES)
    for factory in factories:
        names += [n for n in COMPONENT_PACKAGES.get(factory, ()) if n not in names]
    return [f"spacy_rhetoric>={__version__}"] + [pins.get(_norm(n), n) for n in names]


def model_sources(config_text: str) -> List[str]:
    """The ``SOURCES`` keys of the base models a pipeline's config names."""
    return [key for model, key in MODEL_SOURCES.items() if model in config_text]


def parser_sources(parser_meta: Dict[str, Any]) -> List[Dict[str, str]]:
    """The parser pipeline as a source, then the sources its meta lists."""
    if not parser_meta.get("name"):
        return []
    name = f"{parser_meta.get('lang', 'en')}_{parser_meta['name']}"
    entry = {"name": f"{name} {parser_meta.get('version', '')}".strip(), "url": str(parser_meta.get("url", "")),
             "license": str(parser_meta.get("license", "")) or NONE_STATED,
             "author": str(parser_meta.get("author", ""))}
    listed = [s if isinstance(s, dict) else {"name": str(s)} for s in parser_meta.get("sources") or []]
    return [entry] + [{k: str(v) for k, v in s.items()} for s in listed]


def pipeline_meta(nlp, *, name: str, version: str, training: Sequence[str] = (),
                  performance: Optional[Dict[str, Any]] = None, parser_meta: Optional[Dict[str, Any]] = None,
                  description: str = "", licence: str = "") -> Dict[str, Any]:
    """The meta.json fields of a pipeline the project writes: ``name`` (an
    identifier; ``spacy package`` makes it ``{lang}_{name}``), ``version``,
    ``description``, the sources (``training``: keys of ``SOURCES`` its
    trained components learned from; the rest found from ``nlp``), their
    combined licence (``licence`` overrides it), the trained components'
    scores from ``performance`` and the load requirements."""
    import spacy
    from spacy.util import get_minor_version_range

    if not str(name).isidentifier() or str(name).startswith("core_"):
        raise RhetoricError(f"a pipeline name is an identifier of its own (e.g. rhetoric_pipeline), got {name!r}")
    factories = [nlp.get_pipe_meta(n).factory for n in nlp.pipe_names]
    keys: List[str] = []
    for key in list(training) + [k for f in factories for k in COMPONENT_SOURCES.get(f, ())] + \
            model_sources(nlp.config.to_str()):
        if key not in keys:
            keys.append(key)
    own = [source_entry(k) for k in keys]
    parser = parser_sources(parser_meta or {})
    combined = combined_licence([s["license"] for s in own] + [s.get("license", "") for s in parser[:1]])
    unstated = [s["name"] for s in own if s["license"] == NONE_STATED]
    trained_on = ", ".join(f"{SOURCES[k]['name']} ({SOURCES[k]['license']})" for k in training)
    text = description or "spacy_rhetoric pipeline"
    if trained_on:
        text += f". Trained on {trained_on}"
    text += f". Licence {licence or combined}, from its sources"
    if unstated:
        text += f"; {', '.join(unstated)} state no licence: check their terms before redistributing"
    return {"lang": nlp.lang, "name": str(name), "version": str(version), "description": text + ".",
            "author": AUTHOR, "email": "", "url": "", "license": licence or combined,
            "sources": own + parser, "performance": rhetoric_scores(performance),
            "requirements": load_requirements(factories),
            "spacy_version": get_minor_version_range(spacy.__version__)}
