"""Write RESULTS.md from benchmarks/results.toml and the result files under
benchmarks/*/results/ (``--check``: only say whether it is up to date).
Run from the checkout's root: ``.venv/bin/python scripts/results_table.py``."""
import sys

from spacy_rhetoric.evaluation.results_table import main

if __name__ == "__main__":
    sys.exit(main())
