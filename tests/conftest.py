import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("SPACY_RHETORIC_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.fail(f"shared data directory {SHARED_DATA} is missing (set SPACY_RHETORIC_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def en_parser():
    from spacy_rhetoric.util import load_parser

    return load_parser("en_core_web_sm")
