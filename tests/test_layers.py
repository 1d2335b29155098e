"""The package's layers (docs/architecture.md): a module imports only
from its own layer or lower ones, and no modules import each other in a
cycle. Function-level imports count too (they hide cycles, not remove
them). A new subpackage or root module needs its place in LAYERS."""
import ast
import sys
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "spacy_rhetoric"

# lowest first; a key is a root module or a subpackage of spacy_rhetoric
LAYERS = [
    ("core", {"about", "errors", "io", "util", "resources", "extensions", "long_docs",
              "section_headings", "linear_models", "colors", "meta",
              "capabilities"}),
    ("readers", {"readers"}),
    ("models", {"ml", "losses", "citret"}),
    ("evaluation", {"evaluation"}),
    ("pipeline", {"pipeline"}),
    ("training", {"batching", "pretrain"}),
    ("jobs", {"jobs"}),
    ("apps", {"apps", "search", "corpus_builder"}),
    ("cli", {"cli", "__main__"}),
    # the package's public names (spacy_rhetoric.read_paper, ...) re-export every layer's
    ("api", {"__init__"}),
]
LAYER_OF = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}
LAYER_NAMES = [name for name, _ in LAYERS]


def modules() -> Dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["spacy_rhetoric", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def part_of(module: str) -> str:
    """The LAYERS key of a module: its subpackage or root-module name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(mods: Dict[str, Path]) -> Dict[str, Set[str]]:
    """module -> the package modules it imports (anywhere in its code)."""
    graph: Dict[str, Set[str]] = {}
    for module, path in mods.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:  # `from . import extensions` imports a module
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in mods else target)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        # a module's own packages are imported with it: not an edge
        graph[module] = {t for t in found if t in mods and t != module and not module.startswith(t + ".")}
    return graph


def test_every_module_has_a_layer():
    unknown = sorted({part_of(m) for m in modules()} - set(LAYER_OF))
    assert not unknown, f"put these in tests/test_layers.py LAYERS (and docs/architecture.md): {unknown}"


def test_no_import_from_a_higher_layer():
    mods = modules()
    upward: List[str] = []
    for module, targets in imports(mods).items():
        for target in targets:
            here, there = LAYER_OF.get(part_of(module)), LAYER_OF.get(part_of(target))
            if here is not None and there is not None and there > here:
                upward.append(f"{module} ({LAYER_NAMES[here]}) imports {target} ({LAYER_NAMES[there]})")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_cycles():
    graph = imports(modules())
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    cycles: List[List[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_the_checks_can_fail(tmp_path, monkeypatch):
    """A fake package with an upward import and a cycle is caught."""
    fake = tmp_path / "spacy_rhetoric"
    for folder in ("readers", "pipeline"):
        (fake / folder).mkdir(parents=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "readers" / "a.py").write_text("def f():\n    from ..pipeline import b\n")
    (fake / "pipeline" / "b.py").write_text("from ..readers.a import f\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    graph = imports(modules())
    assert graph["spacy_rhetoric.readers.a"] == {"spacy_rhetoric.pipeline.b"}
    assert graph["spacy_rhetoric.pipeline.b"] == {"spacy_rhetoric.readers.a"}
    for check in (test_no_import_from_a_higher_layer, test_no_import_cycles):
        try:
            check()
        except AssertionError:
            continue
        raise AssertionError(f"{check.__name__} passed on a broken package")


TESTS = Path(__file__).resolve().parent


def imported_test_modules(source: str, test_names: Set[str]) -> Set[str]:
    """The test modules (``test_*`` of ``tests/``) that ``source`` imports."""
    found: Set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.ImportFrom):  # from . import test_x / from .test_x import y
            names = [node.module] if node.module else [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            last = name.split(".")[-1] if name.startswith("tests.") else name
            if last in test_names:
                found.add(last)
    return found


def test_no_test_module_imports_another():
    """Shared data and builders live in tests/helpers.py or tests/conftest.py:
    importing a test module runs (and collects) its tests twice and ties the two."""
    test_names = {p.stem for p in TESTS.glob("test_*.py")}
    offenders = {p.name: sorted(imported_test_modules(p.read_text(encoding="utf8"), test_names))
                 for p in sorted(TESTS.glob("*.py"))}
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, f"move what these share to tests/helpers.py: {offenders}"


def test_the_test_import_check_can_fail():
    names = {"test_search", "test_fitted"}
    assert imported_test_modules("from test_search import PAPERS\n", names) == {"test_search"}
    assert imported_test_modules("import test_fitted\n", names) == {"test_fitted"}
    assert imported_test_modules("from tests.test_fitted import as_X\n", names) == {"test_fitted"}
    assert imported_test_modules("def f():\n    from test_search import x\n", names) == {"test_search"}
    assert imported_test_modules("from helpers import PAPER\nimport spacy\n", names) == set()
