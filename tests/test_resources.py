"""spacy_rhetoric.resources: configs/ and assets/ are found inside the
installed package first (a wheel), else at the top of the source checkout
(editable install, PYTHONPATH). The wheel side runs in test_package.py."""
from pathlib import Path

import pytest

from spacy_rhetoric import resources

REPO = Path(__file__).resolve().parent.parent


def test_checkout_folders_are_found():
    # this test run imports the checkout (PYTHONPATH or `pip install -e .`)
    assert resources.data_dir("configs") == REPO / "configs"
    assert resources.data_dir("assets") == REPO / "assets"
    assert resources.config_path("classifier") == REPO / "configs" / "classifier.cfg"
    assert resources.asset_path("section_rules.json") == REPO / "assets" / "section_rules.json"


def fake_layout(root: Path, *, packaged: bool, checkout: bool, setup_py: bool = True) -> Path:
    package = root / "spacy_rhetoric"
    (package / "configs" / "__pycache__").mkdir(parents=True)  # what an old checkout leaves behind
    (package / "assets").mkdir()
    if packaged:
        (package / "configs" / "a.cfg").write_text("[x]\n")
        (package / "assets" / "rules.json").write_text("{}")
    if checkout:
        (root / "configs").mkdir()
        (root / "configs" / "b.cfg").write_text("[x]\n")
        (root / "assets").mkdir()
        (root / "assets" / "paper.txt").write_text("text")
    if setup_py:
        (root / "setup.py").write_text("")
    return package


@pytest.mark.parametrize("packaged,checkout,configs", [(True, True, ["a"]), (True, False, ["a"]), (False, True, ["b"])])
def test_package_data_first_then_checkout(tmp_path, monkeypatch, packaged, checkout, configs):
    package = fake_layout(tmp_path, packaged=packaged, checkout=checkout)
    monkeypatch.setattr(resources, "PACKAGE_DIR", package)
    assert resources.config_names() == configs
    expected = package if packaged else tmp_path
    assert resources.data_dir("assets") == expected / "assets"
    assert resources.config_path(configs[0]) == expected / "configs" / f"{configs[0]}.cfg"


def test_missing_folders_are_one_clear_error(tmp_path, monkeypatch):
    # a checkout-like folder without setup.py (e.g. site-packages with someone else's configs/) is not taken
    package = fake_layout(tmp_path, packaged=False, checkout=True, setup_py=False)
    monkeypatch.setattr(resources, "PACKAGE_DIR", package)
    with pytest.raises(FileNotFoundError, match="no configs/ folder.*installed package.*source checkout"):
        resources.config_path("b")
    with pytest.raises(ValueError, match="unknown data folder"):
        resources.data_dir("data")


def test_unknown_config_lists_the_available_ones():
    with pytest.raises(FileNotFoundError, match="no packaged config 'nope.cfg'; available: .*classifier_fast"):
        resources.config_path("nope")
