"""Offline assets: link (or copy) the ``assets`` of project.yml from a local
mirror of the data instead of downloading them.

Every asset ``dest`` is ``assets/data/<path>``; the mirror holds the same file
under ``<mirror>/<path>`` (the layout of ../shared/data). Checksums given in
project.yml (MD5, as ``spacy project assets`` uses) are verified. Assets that
are already in place are left alone; assets missing from the mirror are
reported and make the script fail unless ``--allow-missing``.

    python scripts/fetch_assets.py ../shared/data [--project-dir .] [--copy]
"""
import hashlib
import shutil
import sys
from pathlib import Path
from typing import List

import srsly
import typer
from wasabi import msg

PREFIX = Path("assets") / "data"


def md5(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as fileh:
        for block in iter(lambda: fileh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(
    mirror: Path = typer.Argument(..., help="Local data mirror (e.g. ../shared/data)"),
    project_dir: Path = typer.Option(Path("."), "--project-dir", help="Directory with project.yml"),
    copy: bool = typer.Option(False, "--copy", help="Copy instead of symlinking"),
    allow_missing: bool = typer.Option(False, "--allow-missing", help="Do not fail on assets missing from the mirror"),
    env_mirror: str = typer.Option("", "--env-mirror", help="The mirror named by $SPACY_RHETORIC_DATA "
                                   "(project.yml env section); when not empty it is used instead of MIRROR"),
) -> None:
    """Link or copy project assets from MIRROR (or --env-mirror, when set)
    into assets/data/."""
    if env_mirror.strip():
        mirror = Path(env_mirror.strip())
    project_file = project_dir / "project.yml"
    if not project_file.exists():
        msg.fail(f"No project.yml in {project_dir}", exits=1)
    if not mirror.is_dir():
        msg.fail(f"Data mirror {mirror} does not exist" + (" ($SPACY_RHETORIC_DATA)" if env_mirror.strip() else ""),
                 "Set SPACY_RHETORIC_DATA to the data directory, pass --vars.data_mirror DIR, or run "
                 "`spacy project assets` on a machine with network access instead.", exits=1)
    assets = srsly.read_yaml(project_file).get("assets", [])
    missing: List[str] = []
    bad: List[str] = []
    n_linked = n_present = 0
    for asset in assets:
        dest = Path(asset["dest"])
        try:
            rel = dest.relative_to(PREFIX)
        except ValueError:
            msg.warn(f"Skipping {dest}: not under {PREFIX}/")
            continue
        src = (mirror / rel).resolve()
        target = project_dir / dest
        if target.exists():
            n_present += 1
        elif not src.exists():
            missing.append(str(rel))
            continue
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():  # broken link
                target.unlink()
            if copy:
                if src.is_dir():
                    shutil.copytree(src, target)
                else:
                    shutil.copy2(src, target)
            else:
                target.symlink_to(src, target_is_directory=src.is_dir())
            n_linked += 1
        checksum = asset.get("checksum")
        if checksum and target.is_file():
            actual = md5(target)
            if actual != checksum:
                bad.append(f"{dest}: md5 {actual}, expected {checksum}")
    msg.info(f"{len(assets)} assets: {n_linked} {'copied' if copy else 'linked'}, "
             f"{n_present} already present, {len(missing)} missing from the mirror")
    for rel in missing:
        msg.warn(f"missing from {mirror}: {rel}")
    for line in bad:
        msg.fail(f"checksum mismatch: {line}")
    if bad or (missing and not allow_missing):
        sys.exit(1)
    msg.good("Assets ready")


if __name__ == "__main__":
    typer.run(main)
