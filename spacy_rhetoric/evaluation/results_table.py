"""RESULTS.md from the benchmarks' result files: every figure is read from a
JSON file under ``benchmarks/*/results/``, never typed.

The manifest (``benchmarks/results.toml``) names, per table, the question,
the data and the columns (a name, the key of the figure relative to a row's
``at``, a format), and per row the system, the result file, the JSON path of
the row (``at``), the date, the machine and the command id; the commands
themselves are listed in the manifest too and printed below the tables.

A JSON path is a dotted path; a key holding a dot or a space is quoted:
``rows."members: network + TF-IDF 0.3 / 0.7".mean.single_acc``; list items are
numbers (``0.recall``). A row may give a column's figure by its full path
(``figures = {"P@1" = 'vectors."trunk".mean.p_at_1'}``, from the JSON root),
as a figure of another file (``"other.json: path"``), or as the mean of
figures in several files (a list of ``"file.json: path"``; the cell says
"mean of N"); ``skip`` leaves a column empty for that row.

:func:`render` gives the text of RESULTS.md; :func:`problems` lists what is
wrong (a missing file or key, a command id not listed, a RESULTS.md that
differs from what the files say). ``scripts/results_table.py`` is the command.
"""
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import RhetoricError

MANIFEST = Path("benchmarks") / "results.toml"
RESULTS = Path("RESULTS.md")
EMPTY = "–"
_FILE_PATH = re.compile(r"^[^\s:]+\.json:\s")  # "benchmarks/q/results/r.json: path"


class ResultsTableError(RhetoricError):
    """A manifest entry that points at no file or no key, or a bad manifest."""


def load_manifest(path: Path) -> Dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    with Path(path).open("rb") as f:
        return tomllib.load(f)


def parse_path(path: str) -> List[str]:
    """``a."b.c".d`` -> ``["a", "b.c", "d"]``."""
    keys: List[str] = []
    current, quoted, was_quoted = "", False, False
    for char in path.strip():
        if char == '"':
            quoted = not quoted
            was_quoted = True
        elif char == "." and not quoted:
            keys.append(current if was_quoted else current.strip())
            current, was_quoted = "", False
        else:
            current += char
    if quoted:
        raise ResultsTableError(f"unclosed quote in JSON path {path!r}")
    keys.append(current if was_quoted else current.strip())
    if any(k == "" for k in keys):
        raise ResultsTableError(f"empty key in JSON path {path!r}")
    return keys


def join_path(*parts: str) -> str:
    return ".".join(p for p in parts if p)


class Results:
    """The result files of one checkout, each read once."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._files: Dict[str, Any] = {}

    def read(self, file: str) -> Any:
        if file not in self._files:
            path = self.root / file
            if not path.is_file():
                raise ResultsTableError(f"{file}: no such result file")
            self._files[file] = json.loads(path.read_text(encoding="utf8"))
        return self._files[file]

    def value(self, file: str, path: str) -> float:
        node = self.read(file)
        for key in parse_path(path):
            if isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            elif isinstance(node, dict) and key in node:
                node = node[key]
            else:
                raise ResultsTableError(f"{file}: no key {key!r} in {path!r}")
        if isinstance(node, bool) or not isinstance(node, (int, float)):
            raise ResultsTableError(f"{file}: {path!r} is not a number")
        return float(node)


def _format(value: float, fmt: str) -> str:
    return format(value, fmt)


def _cell(results: Results, table: Dict[str, Any], row: Dict[str, Any], column: Dict[str, Any]) -> str:
    name = column["name"]
    if name in row.get("skip", ()):
        return EMPTY
    fmt = column.get("format", ".3f")
    given = row.get("figures", {}).get(name)
    if isinstance(given, list):
        values = []
        for spec in given:
            file, _, path = spec.partition(":")
            values.append(results.value(file.strip(), path))
        return f"{_format(sum(values) / len(values), fmt)} (mean of {len(values)})"
    if "file" not in row and not (isinstance(given, str) and _FILE_PATH.match(given)):
        raise ResultsTableError(f"{table['question']!r}, {row.get('system')!r}: no file")
    if isinstance(given, str) and _FILE_PATH.match(given):  # "other.json: path": a figure of another file
        file, _, path = given.partition(":")
        return _format(results.value(file.strip(), path), fmt)
    path = given if isinstance(given, str) else join_path(row.get("at", ""), column["key"])
    return _format(results.value(row["file"], path), fmt)


def _escape(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(results: Results, table: Dict[str, Any], commands: Dict[str, Any]) -> List[str]:
    columns = table["columns"]
    lines = [f"## {table['question']}", "", f"Data: {table['data']}", ""]
    head = ["system", *[c["name"] for c in columns], "date", "machine", "command"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("| --- | " + " | ".join("---:" for _ in columns) + " | --- | --- | --- |")
    for row in table["row"]:
        command = row["command"]
        if command not in commands:
            raise ResultsTableError(f"{table['question']!r}, {row['system']!r}: command {command!r} is not listed")
        system = _escape(row["system"])
        if row.get("baseline"):
            system = f"*baseline:* {system}"
        cells = [_cell(results, table, row, c) for c in columns]
        lines.append("| " + " | ".join([system, *cells, row["date"], row["machine"], f"[{command}]"]) + " |")
    if table.get("note"):
        lines += ["", _escape(table["note"])]
    return lines + [""]


def _command_order(name: str) -> Tuple[int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 0, name)


def render(manifest: Dict[str, Any], root: Path) -> str:
    """The text of RESULTS.md: the manifest's tables with figures read from
    the result files under ``root``, then the commands by id."""
    results = Results(root)
    commands = manifest.get("commands", {})
    lines = [f"# {manifest.get('title', 'Results')}", "",
             "<!-- generated by scripts/results_table.py from benchmarks/results.toml and the result files; "
             "edit those, not this file -->", ""]
    if manifest.get("intro"):
        lines += [manifest["intro"].strip(), ""]
    machines = manifest.get("machines", {})
    if machines:
        lines += ["Machines: " + "; ".join(f"{name}: {text}" for name, text in machines.items()) + ".", ""]
    for table in manifest.get("table", []):
        for row in table["row"]:
            if row["machine"] not in machines:
                raise ResultsTableError(f"{table['question']!r}, {row['system']!r}: machine "
                                        f"{row['machine']!r} is not described")
        lines += _table(results, table, commands)
    lines += ["## Commands", "", "```"]
    for name in sorted(commands, key=_command_order):
        command = commands[name]
        lines.append(f"# [{name}] {' '.join(command['what'].split())}")
        lines += command["run"].strip("\n").splitlines()
        lines.append("")
    if lines[-1] == "":
        lines.pop()
    lines += ["```", ""]
    return "\n".join(lines)


def problems(manifest_path: Path, root: Path, results_md: Optional[Path] = None) -> List[str]:
    """What is wrong: a manifest entry without its file or key, or a
    RESULTS.md that is not what the result files give."""
    try:
        text = render(load_manifest(manifest_path), root)
    except ResultsTableError as err:
        return [str(err)]
    if results_md is not None:
        current = Path(results_md).read_text(encoding="utf8") if Path(results_md).is_file() else ""
        if current != text:
            return [f"{results_md} differs from what the result files give: run scripts/results_table.py"]
    return []


def main(argv: Optional[Sequence[str]] = None, root: Optional[Path] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Write RESULTS.md from benchmarks/results.toml and the result files.")
    parser.add_argument("--check", action="store_true", help="only check that RESULTS.md is up to date (exit 1 if not)")
    parser.add_argument("--root", type=Path, default=root or Path.cwd(), help="the checkout's root")
    args = parser.parse_args(argv)
    manifest_path = args.root / MANIFEST
    if args.check:
        found = problems(manifest_path, args.root, args.root / RESULTS)
        for line in found:
            print(line)
        return 1 if found else 0
    try:
        text = render(load_manifest(manifest_path), args.root)
    except ResultsTableError as err:
        print(err)
        return 1
    (args.root / RESULTS).write_text(text, encoding="utf8")
    print(f"wrote {RESULTS}")
    return 0
