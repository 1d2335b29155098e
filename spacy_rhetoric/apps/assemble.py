"""One pipeline from trained parts: the English parser + ``rhetoric_phrase_labeler``
+ function classifiers and sentence encoders sourced from their training
pipelines. Used by ``spacy-rhetoric assemble`` (project.yml's ``assemble``
step) and by ``spacy-rhetoric demo``.

- The parser pipeline (``en_core_web_sm``; ``ner`` left out by default) gives
  sentence boundaries, lemmas and the dependency roots the labeler needs.
- Each trained component is added with ``nlp.add_pipe(name, source=trained)``.
  A component that listens to a ``tok2vec`` or ``transformer`` of its training
  pipeline first gets its own copy of that layer (``nlp.replace_listeners``,
  listeners found through the upstream's ``listener_map`` and the listener
  blocks of the component's config), so it runs without its old upstream and
  never attaches to the parser's own ``tok2vec``.
  Exception (``shared_upstream``): components of one training pipeline that
  together are all the listeners of its ``transformer`` (rhetoric_trf.cfg's
  classifier + encoder) keep it, sourced once, so it runs once per doc.
- No two components may write one sentence field: two classifiers need
  different ``label_field``/``scores_field`` (the fine classifier of
  ``configs/fine_classifier.cfg`` writes ``fine_label``), and one encoder
  writes the vectors. That is checked before anything is written. A
  classifier with a vector head (``VectorHead.v1``) also writes the vectors;
  an encoder assembled after it replaces them (the fast profile's tok2vec
  encoder does).
"""
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Sequence, Tuple, Union

import spacy
from spacy.language import Language

from ..errors import RhetoricError
from ..extensions import VECTOR
from ..io import PathError, atomic_dir, check_input, check_output
from ..meta import pipeline_meta, rhetoric_scores
from ..ml.experts import vector_width
from ..util import NUMPY_BLAS_CALLBACK, load_parser

CLASSIFIER = "rhetoric_function_classifier"
ENCODER = "rhetoric_sentence_encoder"
PHRASE_LABELER = "rhetoric_phrase_labeler"
SECTION_TAGGER = "rhetoric_section_tagger"
SOURCED_FACTORIES = (CLASSIFIER, ENCODER)
SMOKE_TEXT = "Parsing is an important task. We propose a new method for parsing."

Source = Union[str, Path, Language]
Phrases = Union[str, Path, List[Tuple[str, str]], None]


def find_component(nlp: Language, factory: str) -> str:
    """Name of the one component of ``nlp`` made by ``factory``."""
    names = [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == factory]
    if len(names) != 1:
        raise RhetoricError(f"expected one {factory} component, found {names} in {nlp.pipe_names}")
    return names[0]


def listener_paths(config: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, str]]:
    """``(dotted path, upstream name)`` of every listener block of a component
    config: a registered-function block with an ``upstream`` setting
    (``spacy.Tok2VecListener``, ``spacy-transformers.TransformerListener``),
    e.g. ``("model.tok2vec", "tok2vec")``."""
    for key, value in config.items():
        if not isinstance(value, dict):
            continue
        path = f"{prefix}{key}"
        if "upstream" in value and any(k.startswith("@") for k in value):
            yield path, value["upstream"]
        else:
            yield from listener_paths(value, path + ".")


def detach_listeners(nlp: Language, name: str, keep: Iterable[str] = ()) -> List[str]:
    """Give component ``name`` of ``nlp`` its own copy of every upstream
    ``tok2vec``/``transformer`` it listens to, except those in ``keep`` (sourced
    as components of their own); returns ``"<path> <- <upstream>"`` for each
    listener replaced."""
    paths = list(listener_paths(nlp.get_pipe_config(name)))
    replaced = []
    for upstream in nlp.pipe_names:
        listeners = getattr(nlp.get_pipe(upstream), "listener_map", {}).get(name)
        if not listeners or upstream in keep:
            continue
        own = [path for path, up in paths if up in (upstream, "*")]
        if len(own) != len(listeners):
            raise RhetoricError(f"{name} has {len(listeners)} listener(s) of {upstream!r} but its config has "
                             f"{len(own)} listener block(s) for it ({own}); cannot give it its own copy")
        nlp.replace_listeners(upstream, name, own)
        replaced.extend(f"{path} <- {upstream}" for path in own)
    return replaced


def shared_upstream(source: Language, name: str, factories: Sequence[str], nlp: Language) -> str:
    """The upstream (``transformer``) that component ``name`` of ``source``
    shares with the other components requested from ``source`` (``factories``),
    so the assembled pipeline runs it once for all of them (rhetoric_trf.cfg's
    classifier + encoder); "" when it listens to no upstream, the upstream has
    listeners that are not requested, a listener block says ``upstream = "*"``,
    or ``nlp`` already has a component of that name (the parser's ``tok2vec``):
    then the component gets its own copy (``detach_listeners``).

    A transformer listener that is not the component's ``model.tok2vec`` (one
    input of a ``concatenate``, benchmarks/common/configs/classifier_sections_minilm_cpu.cfg) cannot be
    copied in: spaCy's ``replace_listeners`` hands a transformer's
    ``replace_listener_cfg`` the ``model.tok2vec`` block whatever the path.
    Its upstream is then sourced as a component of its own even with one
    listener (a ValueError if ``nlp`` has a component of that name)."""
    wanted = {n for n in source.pipe_names if source.get_pipe_meta(n).factory in factories}
    for upstream in source.pipe_names:
        listeners = getattr(source.get_pipe(upstream), "listener_map", {})
        if name not in listeners:
            continue
        names = set(listeners)
        explicit = all(up == upstream for n in names for _, up in listener_paths(source.get_pipe_config(n)))
        if len(names) > 1 and names <= wanted and explicit and upstream not in nlp.pipe_names:
            return upstream
        nested = "replace_listener_cfg" in source.get_pipe(upstream).model.attrs and any(
            path != "model.tok2vec" for path, up in listener_paths(source.get_pipe_config(name)) if up == upstream)
        if nested:
            if upstream in nlp.pipe_names or names - wanted:
                raise RhetoricError(f"{name} listens to {upstream!r} from inside its model, so {upstream!r} must be "
                                 f"added as a component of its own, but "
                                 + (f"the pipeline has a component {upstream!r} already" if upstream in nlp.pipe_names
                                    else f"it also has listeners that were not requested ({sorted(names - wanted)})"))
            return upstream
        continue
    return ""


def _source_key(source: Source) -> Union[int, str]:
    return id(source) if isinstance(source, Language) else str(Path(source).resolve())


def written_fields(nlp: Language, name: str) -> List[str]:
    """The sentence fields component ``name`` writes (``extensions``)."""
    factory = nlp.get_pipe_meta(name).factory
    pipe = nlp.get_pipe(name)
    if factory == CLASSIFIER:
        return [pipe.label_field, pipe.scores_field]
    if factory == ENCODER:
        return [VECTOR]
    return []


def check_fields(nlp: Language) -> None:
    """A ValueError if two components of ``nlp`` write one sentence field."""
    writers: Dict[str, str] = {}
    for name in nlp.pipe_names:
        for field in written_fields(nlp, name):
            if field in writers:
                raise RhetoricError(
                    f"{writers[field]} and {name} both write the sentence field {field!r}: train the fine "
                    f"classifier with label_field = \"fine_label\" (configs/fine_classifier.cfg), "
                    f"and use one encoder")
            writers[field] = name


def describe(nlp: Language, parser: str) -> str:
    """meta.json description of an assembled pipeline."""
    parts = [f"sentence boundaries and parse ({parser})"]
    factories = [nlp.get_pipe_meta(n).factory for n in nlp.pipe_names]
    if PHRASE_LABELER in factories:
        parts.append("rhetorical phrase labels")
    for name in nlp.pipe_names:
        if nlp.get_pipe_meta(name).factory == CLASSIFIER:
            field = nlp.get_pipe(name).label_field
            parts.append("coarse rhetorical function classifier" if field == "label"
                         else f"{field.replace('_', ' ')} classifier")
    if ENCODER in factories:
        parts.append("functional sentence embeddings")
    elif any(vector_width(nlp.get_pipe(n).model) for n, f in zip(nlp.pipe_names, factories) if f == CLASSIFIER):
        parts.append("functional sentence embeddings (the classifier's trunk)")
    return "spacy_rhetoric: " + ", ".join(parts)


def assemble(
    parser: Union[str, Language],
    components: Sequence[Tuple[Source, str]] = (),
    *,
    phrases: Phrases = None,
    n: int = 5,
    exclude: Iterable[str] = ("ner",),
    sections: bool = True,
    name: str = "rhetoric_pipeline",
    version: str = "0.0.1",
    training: Sequence[str] = (),
    licence: str = "",
) -> Tuple[Language, Dict[str, str]]:
    """Parser + ``rhetoric_phrase_labeler`` (initialised from ``phrases``, a
    phrase-list path or ``(label, phrase)`` pairs; left out if None) + one
    component per ``(trained pipeline, factory)`` of ``components``, where the
    trained pipeline is a path or a loaded ``Language``. With ``sections``
    (default) and a classifier among them, ``rhetoric_section_tagger`` goes
    before the sourced components (section categories from the headings).

    The pipeline's meta is its own (``spacy_rhetoric.meta.pipeline_meta``):
    ``name``, ``version``, its sources (``training``: the ``meta.SOURCES``
    keys of the corpora the trained components learned from) and their
    licence (``licence`` overrides it), the scores spaCy wrote for the
    trained components, the packages ``spacy.load`` needs.

    Returns the pipeline and a report ``{component: where it came from}``. The
    pipeline has been run once on a two-sentence text.
    """
    parser_name = parser if isinstance(parser, str) else parser.meta.get("name", "parser")
    nlp = load_parser(parser, exclude=list(exclude)) if isinstance(parser, str) else parser
    parser_meta, own_name = dict(nlp.meta), name  # (``name`` is each sourced component's below)
    performance: Dict[str, Any] = {}
    report = {"parser": f"{parser_name} ({', '.join(nlp.pipe_names)})"}
    if phrases is not None:
        labeler = nlp.add_pipe(PHRASE_LABELER, config={"n": n})
        labeler.initialize(phrases=phrases if isinstance(phrases, list) else str(phrases), nlp=nlp)
        report[PHRASE_LABELER] = f"{len(labeler.labels)} labels" + (
            "" if isinstance(phrases, list) else f" from {phrases}")
    if sections and any(f == CLASSIFIER for _, f in components) and SECTION_TAGGER not in nlp.pipe_names:
        nlp.add_pipe(SECTION_TAGGER)  # sent._.rhetoric_section from the headings, read by section-aware classifiers
        report[SECTION_TAGGER] = "packaged rules and heading classifier"
    loaded: Dict[Union[int, str], Language] = {}
    shared_of: Dict[Tuple[Union[int, str], str], str] = {}
    for source, factory in components:
        if isinstance(source, Language):
            source_nlp, where = source, source.meta.get("name", "a pipeline")
        else:
            where = str(source)
            key = _source_key(source)
            if key not in loaded:
                loaded[key] = spacy.load(check_input(source, what=f"{factory} pipeline", file_ok=False, dir_ok=True))
            source_nlp = loaded[key]
        name = find_component(source_nlp, factory)
        performance.update(rhetoric_scores(source_nlp.meta.get("performance")))
        if (_source_key(source), name) not in shared_of:
            # decided for all components of this source before any of them is added
            # (adding components re-links the upstream's listener_map)
            same_source = [f for s, f in components if _source_key(s) == _source_key(source)]
            for other in {find_component(source_nlp, f) for f in same_source}:
                shared_of[(_source_key(source), other)] = shared_upstream(source_nlp, other, same_source, nlp)
        shared = shared_of[(_source_key(source), name)]
        if shared and shared not in nlp.pipe_names:
            listeners = ", ".join(source_nlp.get_pipe(shared).listening_components)
            nlp.add_pipe(shared, source=source_nlp)
            report[shared] = f"from {where}, shared by {listeners}"
        detached = detach_listeners(source_nlp, name, keep=[shared] if shared else [])
        new_name = name if name not in nlp.pipe_names else f"rhetoric_{name}"
        if new_name in nlp.pipe_names:
            raise RhetoricError(f"{where}: a component named {name!r} (and {new_name!r}) is in the pipeline already")
        nlp.add_pipe(name, name=new_name, source=source_nlp)
        report[new_name] = f"from {where}" + (f" (own copy of {', '.join(detached)})" if detached else "")
    check_fields(nlp)
    nlp.meta.update(pipeline_meta(nlp, name=own_name, version=version, training=training, performance=performance,
                                  parser_meta=parser_meta, description=describe(nlp, parser_name), licence=licence))
    doc = nlp(SMOKE_TEXT)
    if not list(doc.sents):
        raise RhetoricError(f"the assembled pipeline {nlp.pipe_names} found no sentences in {SMOKE_TEXT!r}")
    return nlp, report


def check_pipeline_output(output: Union[str, Path], inputs: Sequence[Union[str, Path, None]] = ()) -> Path:
    """Check, before any work, that a pipeline can be written to ``output``:
    not one of ``inputs``, not a file, and if it exists, a spaCy pipeline
    directory (which is replaced) or an empty directory."""
    output = check_output(output, what="output pipeline", inputs=[p for p in inputs if p is not None],
                          dir_ok=True)
    if output.is_dir() and any(output.iterdir()) and not (output / "config.cfg").is_file():
        raise PathError(f"output pipeline {output} is a directory that holds no spaCy pipeline (no config.cfg); "
                        f"refusing to replace it: choose a new path")
    return output


# The saved pipeline's [nlp.before_creation]: spacy.load then builds its thinc models with numpy's BLAS on the CPU.
CPU_OPS_CALLBACK = {"@callbacks": NUMPY_BLAS_CALLBACK}


def save_pipeline(nlp: Language, output: Union[str, Path]) -> Path:
    """``nlp.to_disk`` into a temporary directory renamed to ``output``
    (check it first with ``check_pipeline_output``). Its config's
    ``[nlp.before_creation]`` is ``CPU_OPS_CALLBACK`` where it named none
    (the parser's config comes without one), so that ``spacy.load`` of the
    pipeline on the CPU runs thinc's layers with numpy's BLAS
    (``util.use_numpy_blas``)."""
    from spacy.util import load_config

    output = Path(output)
    with atomic_dir(output) as tmp:
        nlp.to_disk(tmp)
        config = load_config(tmp / "config.cfg", interpolate=False)
        if config["nlp"].get("before_creation") is None:
            config["nlp"]["before_creation"] = dict(CPU_OPS_CALLBACK)
            config.to_disk(tmp / "config.cfg")
    return output

