"""RESULTS.md is what benchmarks/results.toml reads from the result files:
regenerated in memory and compared; a manifest entry without its file, key
or command fails."""
import json
from pathlib import Path

import pytest

from spacy_rhetoric.evaluation.results_table import (
    MANIFEST,
    RESULTS,
    ResultsTableError,
    load_manifest,
    parse_path,
    problems,
    render,
)

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("tomllib", reason="the manifest is TOML (Python >= 3.11)")


def test_results_md_is_what_the_result_files_say():
    assert problems(ROOT / MANIFEST, ROOT, ROOT / RESULTS) == []


def test_every_row_reads_a_result_file_under_benchmarks():
    manifest = load_manifest(ROOT / MANIFEST)
    for table in manifest["table"]:
        for row in table["row"]:
            files = [row["file"]] if "file" in row else []
            files += [s.partition(":")[0].strip() for v in row.get("figures", {}).values()
                      if isinstance(v, list) for s in v]
            assert files, row["system"]
            for file in files:
                parts = Path(file).parts
                assert parts[0] == "benchmarks" and parts[2] == "results" and file.endswith(".json"), file


def test_parse_path_quotes_keys_with_dots():
    assert parse_path('rows."a 0.2 / 0.4".mean.single_acc') == ["rows", "a 0.2 / 0.4", "mean", "single_acc"]
    assert parse_path("0.recall") == ["0", "recall"]
    with pytest.raises(ResultsTableError):
        parse_path('rows."open')


MINI = """
[machines]
box = "a machine"

[[table]]
question = "Q"
data = "D"
columns = [{ name = "acc", key = "acc" }, { name = "share", key = "share", format = ".1%" }]

[[table.row]]
system = "ours"
file = "benchmarks/q/results/r.json"
at = 'rows."x 0.5".mean'
date = "2026-01-01"
machine = "box"
command = "C1"

[[table.row]]
system = "theirs"
baseline = true
figures.acc = ["benchmarks/q/results/r.json: rows.b.f1.acc", "benchmarks/q/results/r.json: rows.b.f2.acc"]
figures.share = "benchmarks/q/results/other.json: share"
date = "2026-01-01"
machine = "box"
command = "C1"

[commands.C1]
what = "the run"
run = '''
python benchmarks/q/run.py --out benchmarks/q/results/r.json
'''
"""


def mini_checkout(tmp_path, manifest=MINI, figures=None):
    (tmp_path / "benchmarks" / "q" / "results").mkdir(parents=True)
    figures = figures or {"rows": {"x 0.5": {"mean": {"acc": 0.8123, "share": 0.0567}},
                                   "b": {"f1": {"acc": 0.5}, "f2": {"acc": 0.7}}}}
    (tmp_path / "benchmarks" / "q" / "results" / "r.json").write_text(json.dumps(figures))
    (tmp_path / "benchmarks" / "q" / "results" / "other.json").write_text(json.dumps({"share": 0.25}))
    (tmp_path / MANIFEST).write_text(manifest)
    return tmp_path


def test_a_small_manifest_renders_one_figure_per_cell(tmp_path):
    root = mini_checkout(tmp_path)
    text = render(load_manifest(root / MANIFEST), root)
    assert "| ours | 0.812 | 5.7% | 2026-01-01 | box | [C1] |" in text
    assert "| *baseline:* theirs | 0.600 (mean of 2) | 25.0% | 2026-01-01 | box | [C1] |" in text
    assert "# [C1] the run\npython benchmarks/q/run.py" in text
    (root / RESULTS).write_text(text)
    assert problems(root / MANIFEST, root, root / RESULTS) == []


def test_a_changed_result_file_makes_results_md_stale(tmp_path):
    root = mini_checkout(tmp_path)
    (root / RESULTS).write_text(render(load_manifest(root / MANIFEST), root))
    (root / "benchmarks" / "q" / "results" / "r.json").write_text(json.dumps(
        {"rows": {"x 0.5": {"mean": {"acc": 0.9, "share": 0.0567}}, "b": {"f1": {"acc": 0.5}, "f2": {"acc": 0.7}}}}))
    assert "differs" in problems(root / MANIFEST, root, root / RESULTS)[0]


@pytest.mark.parametrize("change, message", [
    (("at = 'rows.\"x 0.5\".mean'", "at = 'rows.\"x 0.5\".median'"), "no key 'median'"),
    (("rows.b.f2.acc", "rows.b.f3.acc"), "no key 'f3'"),
    (("file = \"benchmarks/q/results/r.json\"", "file = \"benchmarks/q/results/gone.json\""), "no such result file"),
    (("command = \"C1\"\n\n[[table.row]]", "command = \"C9\"\n\n[[table.row]]"), "command 'C9' is not listed"),
    (("machine = \"box\"\ncommand = \"C1\"\n\n[[", "machine = \"laptop\"\ncommand = \"C1\"\n\n[["), "machine 'laptop'"),
])
def test_a_manifest_entry_without_its_figure_fails(tmp_path, change, message):
    old, new = change
    assert old in MINI
    root = mini_checkout(tmp_path, MINI.replace(old, new, 1))
    found = problems(root / MANIFEST, root)
    assert len(found) == 1 and message in found[0]
