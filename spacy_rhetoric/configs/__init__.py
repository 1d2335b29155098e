"""The training configs shipped with the package (``spacy train`` configs,
``<name>.cfg`` beside this file), found with ``importlib.resources`` so they
work from a source checkout and from an installed wheel alike:

    python -m spacy train "$(python -c 'from spacy_rhetoric.configs import config_path; print(config_path("classifier_cpu"))')" ...
"""
from importlib.resources import files
from pathlib import Path
from typing import List


def config_names() -> List[str]:
    """Names of the packaged configs, without ``.cfg``."""
    return sorted(p.name[: -len(".cfg")] for p in files(__name__).iterdir() if p.name.endswith(".cfg"))


def config_path(name: str) -> Path:
    """Filesystem path of the packaged config ``name`` (``"classifier_cpu"``
    or ``"classifier_cpu.cfg"``); a FileNotFoundError listing the available
    configs otherwise."""
    filename = name if name.endswith(".cfg") else f"{name}.cfg"
    resource = files(__name__) / filename
    if not resource.is_file():
        raise FileNotFoundError(f"no packaged config {filename!r}; available: {', '.join(config_names())}")
    path = Path(str(resource))
    if not path.is_file():  # e.g. a zipped install: spacy train needs a real file
        raise FileNotFoundError(f"packaged config {filename!r} is not a file on disk ({resource})")
    return path
