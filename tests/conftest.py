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


@pytest.fixture(scope="session")
def demo_like_pipeline(tmp_path_factory) -> Path:
    """The directory of a tiny pipeline of the demo's shape (parser, phrase
    labeler, section tagger, the default full-paper classifier whose
    fine-tuned member gives the labels and the sentence vectors), trained a
    few steps and written with its meta.json by the demo's own code
    (``helpers.build_demo_like_pipeline``); built once per session. Load it
    with ``spacy.load``; never write into it."""
    from helpers import build_demo_like_pipeline

    return build_demo_like_pipeline(tmp_path_factory.mktemp("demo_like"))
