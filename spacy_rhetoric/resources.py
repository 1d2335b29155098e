"""Where the package's data files are: the training configs (``configs/``,
``spacy train`` configs) and the assets (``assets/``: sample paper, section
rules, heading model).

In the repository they live at the top, beside ``project.yml`` (as in spaCy
project templates); the wheel ships them inside the package
(``spacy_rhetoric/configs``, ``spacy_rhetoric/assets``: ``setup.py`` maps the
two folders into the package at build time, so git holds one copy). They are
looked up in that order, so the same code works from an installed wheel, an
editable install (``pip install -e .``) and a plain checkout on
``PYTHONPATH``::

    python -m spacy train "$(python -c 'from spacy_rhetoric.resources import config_path; print(config_path("classifier"))')" ...
"""
from pathlib import Path
from typing import List

CONFIGS = "configs"
ASSETS = "assets"
# the kinds of file each folder holds (a folder without any is not taken:
# e.g. a stale spacy_rhetoric/configs/__pycache__ left by an older checkout)
_SUFFIXES = {CONFIGS: (".cfg",), ASSETS: (".json", ".txt")}
# the folder of this package (its data folders are looked for inside it first, then beside it)
PACKAGE_DIR = Path(__file__).resolve().parent


def _holds_data(folder: Path, kind: str) -> bool:
    return folder.is_dir() and any(p.suffix in _SUFFIXES[kind] and p.is_file() for p in folder.iterdir())


def data_dir(kind: str) -> Path:
    """The folder of ``kind`` (``"configs"`` or ``"assets"``): inside the
    installed package, else at the top of the source checkout the package
    was imported from (the folder beside ``setup.py``); a FileNotFoundError
    naming both places otherwise."""
    if kind not in _SUFFIXES:
        raise ValueError(f"unknown data folder {kind!r}; expected one of {', '.join(_SUFFIXES)}")
    packaged = PACKAGE_DIR / kind
    if _holds_data(packaged, kind):
        return packaged
    checkout = PACKAGE_DIR.parent / kind
    if (PACKAGE_DIR.parent / "setup.py").is_file() and _holds_data(checkout, kind):
        return checkout
    raise FileNotFoundError(f"no {kind}/ folder: neither {packaged} (installed package) nor {checkout} "
                            "(source checkout) holds it")


def config_names() -> List[str]:
    """Names of the packaged configs, without ``.cfg``."""
    return sorted(p.name[: -len(".cfg")] for p in data_dir(CONFIGS).iterdir() if p.name.endswith(".cfg"))


def config_path(name: str) -> Path:
    """Filesystem path of the packaged config ``name`` (``"classifier"``
    or ``"classifier.cfg"``); a FileNotFoundError listing the available
    configs otherwise."""
    filename = name if name.endswith(".cfg") else f"{name}.cfg"
    path = data_dir(CONFIGS) / filename
    if not path.is_file():
        raise FileNotFoundError(f"no packaged config {filename!r}; available: {', '.join(config_names())}")
    return path


def asset_path(filename: str) -> Path:
    """Filesystem path of the packaged asset ``filename`` (the file need not
    exist yet: ``scripts/build_section_model.py`` writes one)."""
    return data_dir(ASSETS) / filename
