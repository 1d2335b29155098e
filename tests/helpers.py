"""Small helpers shared by test modules (import as ``from helpers import ...``;
pytest puts ``tests/`` on ``sys.path``)."""
from importlib.metadata import entry_points
from typing import Any, Dict, Set

from spacy.util import registry
from thinc.api import Config


def resolve_config(text: str) -> Dict[str, Any]:
    """The sections of a config string with every registered function resolved."""
    return registry.resolve(Config().from_str(text))


def entry_point_names(group: str) -> Set[str]:
    """Names of the installed entry points of ``group`` (e.g. ``spacy_misc``)."""
    return {ep.name for ep in entry_points(group=group)}
