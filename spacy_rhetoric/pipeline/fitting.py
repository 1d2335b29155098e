"""The member-fitting step: the one place where the fitted members of a
pipeline's models (``ml/members.py``: the full-paper classifier's TF-IDF
regressions and fine-tuned MiniLM) learn, apart from ``initialize``.

spaCy's ``initialize`` sizes and labels; training is what the config says
and ``spacy train`` schedules. So a pipe's ``initialize`` fits nothing, and
the members are fitted by an explicit step with its own settings:

- in a training config, the callback ``spacy_rhetoric.fit_members.v1`` in
  ``[training.before_update]``: ``spacy train`` calls it before its first
  update, and it fits the members on the corpus it names (``corpus``, a dot
  name into ``[corpora]``, "corpora.train" by default) -- the dev scores of
  the first evaluation are already the mixture's::

      [training.before_update]
      @callbacks = "spacy_rhetoric.fit_members.v1"
      corpus = "corpora.train"

  (Not ``[initialize.after_init]``: spaCy calls that inside
  ``nlp.initialize()``, which would then train again.)
- in code, :func:`fit_pipeline_members` ``(nlp, examples)`` after
  ``nlp.initialize``.

Each member's settings are the arguments of its config block (recorded in
its ``attrs``, saved with the pipeline); the fit draws only from the
member's own generators, seeded from its ``seed`` (``${system.seed}`` in the
shipped configs), and leaves the process's random state as it was.
"""
import random
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy
from spacy.language import Language
from spacy.training import Example
from spacy.util import registry, resolve_dot_names

from ..errors import RhetoricError
from ..ml.members import fitted_members

Examples = Union[Iterable[Example], Callable[[], Iterable[Example]]]


def member_components(nlp: Language, names: Optional[Sequence[str]] = None) -> List[str]:
    """The components of ``nlp`` (or ``names`` of them) whose model has
    fitted members and that can fit them (``fit_members``)."""
    out = []
    for name, pipe in nlp.pipeline:
        if names is not None and name not in names:
            continue
        model = getattr(pipe, "model", None)
        if hasattr(pipe, "fit_members") and model is not None and fitted_members(model):
            out.append(name)
    missing = sorted(set(names or ()) - set(out))
    if missing:
        raise RhetoricError(f"fit_members: {missing} are no components with fitted members (those: {out})")
    return out


def fit_pipeline_members(nlp: Language, examples: Examples, components: Optional[Sequence[str]] = None
                         ) -> Dict[str, Dict[str, Dict[str, int]]]:
    """Fit the fitted members of every component of the initialized ``nlp``
    that has them (or of ``components``) on ``examples`` (Examples, or a
    function giving them, as ``nlp.initialize`` takes); python's and numpy's
    global random states are the same after it. Returns per component the
    counts per member (``ml.members.fit_members``)."""
    get_examples = examples if callable(examples) else _replay(list(examples))
    states = random.getstate(), numpy.random.get_state()
    try:
        return {name: nlp.get_pipe(name).fit_members(get_examples) for name in member_components(nlp, components)}
    finally:
        random.setstate(states[0])
        numpy.random.set_state(states[1])


def _replay(examples: List[Example]) -> Callable[[], Iterable[Example]]:
    return lambda: iter(examples)


@registry.callbacks("spacy_rhetoric.fit_members.v1")
def make_fit_members(corpus: str = "corpora.train", components: Optional[List[str]] = None) -> Callable:
    """The member-fitting step as a training callback (module docstring):
    for ``[training.before_update]`` (it runs at step 0 only) or any
    callback slot that passes the ``nlp``. ``corpus``: the dot name of the
    corpus to fit on; ``components``: the components whose members to fit
    (None: every one with fitted members that ``[training]
    frozen_components`` does not freeze)."""

    def fit(nlp: Language, info: Optional[Dict] = None) -> Language:
        if info is not None and int(info.get("step", 0)) != 0:
            return nlp
        config = nlp.config.interpolate()
        names = components
        if names is None:
            frozen = set(config.get("training", {}).get("frozen_components", []))
            names = [name for name in member_components(nlp) if name not in frozen]
        (reader,) = resolve_dot_names(config, [corpus])
        fit_pipeline_members(nlp, lambda: reader(nlp), names)
        return nlp

    return fit
