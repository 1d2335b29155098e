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
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import spacy
from spacy.training import Example

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.readers.common import doc_from_sentences

REPO = Path(__file__).resolve().parent.parent
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


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_package_installs_and_loads_by_name(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
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

    # Build from a copy of the sources, so no build/ directory lands in the checkout.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "spacy_rhetoric", src / "spacy_rhetoric",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(wheels), str(src)], env=env, cwd=tmp_path)
    rhetoric_wheel = list(wheels.glob("spacy_rhetoric-*.whl"))
    assert len(rhetoric_wheel) == 1, list(wheels.iterdir())

    scratch = tmp_path / "scratch"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
         "--target", str(scratch), str(sdists[0]), str(rhetoric_wheel[0])], env=env, cwd=tmp_path)
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
