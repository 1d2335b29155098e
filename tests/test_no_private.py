"""Benchmarks and tests use the package's public names and never load a
script by its path: no ``from spacy_rhetoric... import _name``, no
``module._name`` on a spacy_rhetoric module (read, called or monkeypatched),
no ``importlib.util.spec_from_file_location`` / ``SourceFileLoader`` /
``runpy`` / ``sys.path`` edits to import a script. What a benchmark and its
test share lives in the package (``spacy_rhetoric.evaluation``); a script is
run as a command (``subprocess``), not imported."""
import ast
from pathlib import Path
from typing import List, Set

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "spacy_rhetoric"
SCANNED = ("benchmarks", "tests")
LOADERS = {"spec_from_file_location", "SourceFileLoader", "run_path", "run_module", "syspath_prepend",
           "load_source"}


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_"


def is_package_module(dotted: str) -> bool:
    """Whether ``spacy_rhetoric.a.b`` is a module or subpackage of the package."""
    parts = dotted.split(".")
    if parts[0] != "spacy_rhetoric":
        return False
    path = PACKAGE.joinpath(*parts[1:])
    return len(parts) == 1 or path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def module_names(tree: ast.AST) -> Set[str]:
    """The local names bound to spacy_rhetoric modules (``import spacy_rhetoric.x as m``,
    ``from spacy_rhetoric.x import module``, ``import spacy_rhetoric``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "spacy_rhetoric":
                    names.add(alias.asname or "spacy_rhetoric")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "spacy_rhetoric":
            for alias in node.names:
                if is_package_module(f"{node.module}.{alias.name}"):
                    names.add(alias.asname or alias.name)
    return names


def root_name(node: ast.AST):
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(source: str) -> List[str]:
    """``name (line)`` for each private spacy_rhetoric name a file imports or
    reaches through a module, and each script it loads by path."""
    tree = ast.parse(source)
    modules = module_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "spacy_rhetoric":
            found += [f"{a.name} ({node.lineno})" for a in node.names if is_private(a.name)]
        elif isinstance(node, ast.Attribute) and is_private(node.attr) and root_name(node.value) in modules:
            found.append(f"{node.attr} ({node.lineno})")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in LOADERS:
                found.append(f"{name} ({node.lineno}): a script loaded by path")
            elif (isinstance(func, ast.Attribute) and func.attr in ("insert", "append", "extend")
                  and isinstance(func.value, ast.Attribute) and func.value.attr == "path"
                  and root_name(func.value) == "sys"):
                found.append(f"sys.path.{func.attr} ({node.lineno}): a script imported from its folder")
            elif (name == "setattr" and len(node.args) >= 2 and root_name(node.args[0]) in modules
                  and isinstance(node.args[1], ast.Constant) and is_private(str(node.args[1].value))):
                found.append(f"{node.args[1].value} ({node.lineno})")
    return sorted(found, key=lambda use: int(use.split("(", 1)[1].split(")", 1)[0]))


def problems() -> List[str]:
    out = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "tests/test_no_private.py":
                continue
            out += [f"{rel}: {use}" for use in private_uses(path.read_text(encoding="utf8"))]
    return out


def test_benchmarks_and_tests_use_public_names_and_load_no_script_by_path():
    assert problems() == []


def test_the_check_finds_private_names_and_scripts_loaded_by_path():
    source = '''
import importlib.util
import sys
import spacy_rhetoric.ml.experts as experts
from spacy_rhetoric.citret.evaluation import _same_citance, citance_key
from spacy_rhetoric.ml import members
from spacy_rhetoric.extensions import LABEL

SPEC = importlib.util.spec_from_file_location("bench", "benchmarks/fullpaper/bench_fullpaper.py")
sys.path.insert(0, "benchmarks/encoder")
experts._RECORDING.clear()
members._member_forward(None, None, False)
doc._.rhetoric_label, obj._private, LABEL.__class__

def test(monkeypatch):
    monkeypatch.setattr(members, "_member_init", None)
    monkeypatch.syspath_prepend("benchmarks")
'''
    assert private_uses(source) == [
        "_same_citance (5)",
        "spec_from_file_location (9): a script loaded by path",
        "sys.path.insert (10): a script imported from its folder",
        "_RECORDING (11)",
        "_member_forward (12)",
        "_member_init (16)",
        "syspath_prepend (17): a script loaded by path",
    ]
