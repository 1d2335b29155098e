"""`make test` must fail when pytest collects no tests (pytest's exit code 5)."""
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.skipif(not (REPO / ".venv" / ".installed").exists(), reason="needs the installed .venv of `make install`")
def test_make_test_fails_when_no_tests_are_collected(tmp_path):
    empty = tmp_path / "no_tests"
    empty.mkdir()
    (empty / "test_nothing.py").write_text('"""No test functions here."""\n', encoding="utf8")
    result = subprocess.run(["make", "-s", "test", f"TESTS={empty}"], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "collected no tests" in result.stdout
