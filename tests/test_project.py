"""project.yml, read with spaCy's own project loader (weasel): the two profiles
(`all` = best: one shared MiniLM transformer for the coarse classifier and the
encoder; `all-fast` = the tok2vec pipeline) resolve to the right configs, every
script names existing configs, config settings and `spacy-rhetoric`
sub-commands, `--vars.gpu_id` reaches every `spacy train`, and the assembly of
a shared-upstream pipeline keeps one upstream and adds the section tagger."""
import re
import shlex
import shutil
from pathlib import Path

import pytest
import spacy
from weasel.util import load_project_config

from spacy_rhetoric.apps.assemble import CLASSIFIER, ENCODER, SECTION_TAGGER, assemble, save_pipeline
from spacy_rhetoric.cli import COMMAND_MODULES, app, load_commands

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
CONFIG_RE = re.compile(r"configs/([\w.-]+)\.cfg")
PROFILE_CONFIGS = {
    "all": {"classifier", "fine_classifier"},
    "all-fast": {"classifier_fast", "classifier", "encoder", "fine_classifier"},
}


def project(tmp_path, **overrides):
    """project.yml loaded and interpolated by weasel (from a copy: the loader
    creates the `directories`)."""
    shutil.copy(ROOT / "project.yml", tmp_path / "project.yml")
    return load_project_config(tmp_path, overrides={f"vars.{k}": v for k, v in overrides.items()})


def scripts(config, workflow=None):
    commands = {c["name"]: c for c in config["commands"]}
    names = config["workflows"][workflow] if workflow else list(commands)
    return [(name, shlex.split(line)) for name in names for line in commands[name].get("script", [])]


def train_lines(lines):
    return [args for _, args in lines if args[:4] == ["python", "-m", "spacy", "train"]]


@pytest.mark.parametrize("workflow", sorted(PROFILE_CONFIGS))
def test_profile_workflow_resolves_to_its_configs(tmp_path, workflow):
    config = project(tmp_path)
    lines = scripts(config, workflow)
    trained = {CONFIG_RE.search(args[4]).group(1) for args in train_lines(lines)}
    assert trained == PROFILE_CONFIGS[workflow]
    assemble_args = [args for _, args in lines if args[3:4] == ["assemble"]]
    assert len(assemble_args) == 1
    args = assemble_args[0]
    opts = {k: args[i + 1] for i, k in enumerate(args) if k.startswith("--")}
    assert {"--phrases", "--classifier", "--fine-classifier"} <= set(opts)
    # both: the coarse classifier is the full-paper one (model-last, as cross-validated)
    assert opts["--classifier"].endswith("/fullpaper/model-last")
    # best: the vectors come from the classifier's trunk (its vector head), no separate encoder
    assert ("--encoder" not in opts) == (workflow == "all")
    if workflow == "all":
        text = (CONFIGS / "classifier.cfg").read_text(encoding="utf8")
        assert "[components.rhetoric_function_classifier.model.members.finetuned.vectors]" in text
    # the workflow ends with the package of the pipeline it assembled
    package = [args for _, args in lines if args[3:4] == ["package"]]
    assert package and package[-1][4] == args[4]


def test_the_every_field_workflow_trains_on_art_and_ships_its_licence(tmp_path):
    """`coresc`: the coarse classifier on every field's papers and the CoreSC
    classifier on ART, assembled and packaged with ART among its sources (the licence CC BY-NC-SA from them)."""
    config = project(tmp_path)
    lines = scripts(config, "coresc")
    trained = {CONFIG_RE.search(args[4]).group(1): args for args in train_lines(lines)}
    assert set(trained) == {"classifier", "coresc_classifier"}
    assert "corpus/fullpaper_fields/train.spacy" in trained["classifier"]
    assert "corpus/coresc/train.spacy" in trained["coresc_classifier"]
    converts = [args for _, args in lines if "spacy_rhetoric.readers.section_labels" in args]
    assert any("--coresc" in args and "--fullpaper" in args for args in converts)
    assert any("--coresc-only" in args for args in converts)
    (assemble_args,) = [args for _, args in lines if args[3:4] == ["assemble"]]
    opts = {k: assemble_args[i + 1] for i, k in enumerate(assemble_args) if k.startswith("--")}
    assert opts["--classifier"].endswith("/fullpaper_fields/model-last")
    assert opts["--fine-classifier"].endswith("/coresc_classifier/model-last")
    assert "coresc-art" in opts["--sources"].split(",") and opts["--name"].endswith("_coresc")
    package = [args for _, args in lines if args[3:4] == ["package"]]
    assert package and package[-1][4] == assemble_args[4]
    (asset,) = [a for a in config["assets"] if a["dest"] == "assets/data/coresc-art"]
    assert asset["git"] == {"repo": "https://github.com/kermitt2/hypothesis_detection", "branch": "master",
                            "path": "dataset/external/ART_Corpus"}


def test_gpu_id_var_reaches_every_spacy_train(tmp_path):
    config = project(tmp_path, gpu_id=0)
    lines = train_lines(scripts(config))
    assert lines
    for args in lines:
        assert args[args.index("--gpu-id") + 1] == "0", args


def test_scripts_reference_existing_configs_settings_and_commands(tmp_path):
    load_commands()
    sub_commands = {c.name for c in app.registered_commands}
    assert len(COMMAND_MODULES) <= len(sub_commands)
    for profile in ({}, {"gpu_id": 0}):
        for name, args in scripts(project(tmp_path, **profile)):
            for word in args:
                for cfg in CONFIG_RE.findall(word):
                    assert (CONFIGS / f"{cfg}.cfg").is_file(), (name, cfg)
            if args[:3] == ["python", "-m", "spacy_rhetoric"]:
                assert args[3] in sub_commands, (name, args[3])
    # every dotted `spacy train` override is a setting of the config it is given to
    for args in train_lines(scripts(project(tmp_path))):
        cfg = spacy.util.load_config(ROOT / args[4], interpolate=False)
        for opt in [a for a in args[5:] if a.startswith("--") and "." in a]:
            node = cfg
            for part in opt[2:].split("."):
                assert part in node, (args[4], opt)
                node = node[part]


# a test uses a config when it loads it by name: config_path("x"), CONFIGS / "x.cfg", "configs" / "x.cfg"
TEST_CONFIG_RE = re.compile(r"""config_path\(\s*["']([\w.-]+?)(?:\.cfg)?["']|["']configs["']\s*/\s*["']([\w.-]+)\.cfg["']"""
                            r"""|CONFIGS\s*/\s*["']([\w.-]+)\.cfg["']""")


def unused_configs(names, project_words, demo_configs, test_sources):
    """The config names that project.yml (its interpolated scripts and deps),
    the demo (its ``*_CONFIG`` names) and the tests (loading one by name) all leave unused."""
    used = {cfg for word in project_words for cfg in CONFIG_RE.findall(word)} | set(demo_configs)
    for source in test_sources:
        used.update(name for groups in TEST_CONFIG_RE.findall(source) for name in groups if name)
    return sorted(set(names) - used)


def test_every_shipped_config_is_used(tmp_path):
    """A config in configs/ is trained by project.yml, by the demo or loaded by a
    test; an ablation the benchmarks alone use lives in benchmarks/common/configs/."""
    from spacy_rhetoric.apps import demo

    config = project(tmp_path)
    words = [word for _, args in scripts(config) for word in args]
    words += [dep for command in config["commands"] for dep in command.get("deps", [])]
    demo_configs = [value for name, value in vars(demo).items() if name.endswith("_CONFIG")]
    sources = [path.read_text(encoding="utf8") for path in sorted((ROOT / "tests").glob("*.py"))]
    names = sorted(path.stem for path in CONFIGS.glob("*.cfg"))
    assert names and demo_configs
    unused = unused_configs(names, words, demo_configs, sources)
    assert not unused, f"used by no workflow, demo or test: move to benchmarks/common/configs/ or delete: {unused}"


def test_the_unused_config_check_can_fail():
    words = ["configs/classifier.cfg", "training/x"]
    sources = ['config_path("encoder")', 'spacy.util.load_config(CONFIGS / "rhetoric_trf.cfg")',
               'ROOT / "configs" / "fine.cfg"', '{"listed_only"}']
    names = ["classifier", "encoder", "fine", "listed_only", "rhetoric_trf", "demo_one"]
    assert unused_configs(names, words, ["demo_one"], sources) == ["listed_only"]


def trained_source(with_encoder: bool):
    """A tiny initialized training pipeline: tok2vec "shared" + classifier (+ encoder), both listening to it."""
    from spacy.training import Example

    from spacy_rhetoric import set_sent_labels

    listener = {"@architectures": "spacy.Tok2VecListener.v1", "width": 96, "upstream": "shared"}
    source = spacy.blank("en")
    source.add_pipe("sentencizer")
    source.add_pipe("tok2vec", name="shared")
    source.add_pipe(CLASSIFIER, config={"model": {"tok2vec": listener}})
    if with_encoder:
        source.add_pipe(ENCODER, config={"model": {"tok2vec": listener}})
    doc = source.make_doc("We propose a parser. It works well.")
    doc[0].is_sent_start, doc[5].is_sent_start = True, True
    ref = doc.copy()
    set_sent_labels(ref, ["objective", "result"])
    source.initialize(lambda: [Example(source.make_doc(doc.text), ref)])
    return source


def test_assemble_shares_one_upstream_and_adds_the_section_tagger(tmp_path):
    """What `assemble` does with the best profile's pipeline: a classifier and an
    encoder listening to one upstream of their pipeline (rhetoric_trf.cfg's
    transformer; here a tok2vec named "shared") keep it, once; the section
    tagger goes before them."""
    source = trained_source(with_encoder=True)
    parser = spacy.blank("en")
    parser.add_pipe("sentencizer")
    nlp, report = assemble(parser, [(source, CLASSIFIER), (source, ENCODER)])
    assert nlp.pipe_names == ["sentencizer", SECTION_TAGGER, "shared", CLASSIFIER, ENCODER]
    assert sorted(nlp.get_pipe("shared").listening_components) == sorted([CLASSIFIER, ENCODER])
    assert "own copy" not in report[CLASSIFIER] + report[ENCODER]
    assert report["shared"].endswith(f"shared by {CLASSIFIER}, {ENCODER}")
    out = nlp("We propose a parser. It works well.")
    assert all(s._.rhetoric_label is not None and s._.rhetoric_vector is not None for s in out.sents)
    save_pipeline(nlp, tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert sorted(loaded.get_pipe("shared").listening_components) == sorted([CLASSIFIER, ENCODER])
    again = loaded("We propose a parser. It works well.")
    assert [s._.rhetoric_label for s in again.sents] == [s._.rhetoric_label for s in out.sents]


def test_assemble_takes_the_classifier_and_the_encoder_from_different_pipelines():
    """What both profiles' assemble steps do now: the full-paper classifier from its own training pipeline and
    the encoder from a pipeline where it shares an upstream with another classifier; each keeps its own copy."""
    parser = spacy.blank("en")
    parser.add_pipe("sentencizer")
    nlp, report = assemble(parser, [(trained_source(False), CLASSIFIER), (trained_source(True), ENCODER)])
    assert nlp.pipe_names == ["sentencizer", SECTION_TAGGER, CLASSIFIER, ENCODER]
    assert "own copy" in report[CLASSIFIER] and "own copy" in report[ENCODER]
    out = nlp("We propose a parser. It works well.")
    assert all(s._.rhetoric_label is not None and s._.rhetoric_vector is not None for s in out.sents)


BENCHMARKS = ROOT / "benchmarks"
# not question folders: run outputs (git-ignored) and Python's caches
BENCHMARK_SKIP = {"out", "__pycache__"}
# the index of the question folders, and the manifest RESULTS.md is written from
BENCHMARK_TOP_FILES = {"README.md", "results.toml"}


def benchmark_layout_problems(root: Path):
    """What breaks the one-folder-per-question layout of `root` (benchmarks/): a
    file at its top other than README.md and results.toml, a question folder
    without a README.md."""
    problems = [f"loose at the top: {p.name}" for p in sorted(root.iterdir())
                if p.is_file() and p.name not in BENCHMARK_TOP_FILES]
    if not (root / "README.md").is_file():
        problems.append("no README.md (the index of the question folders)")
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if folder.name in BENCHMARK_SKIP or folder.name.startswith("."):
            continue
        if not (folder / "README.md").is_file():
            problems.append(f"no README.md in {folder.name}/")
    return problems


def test_benchmarks_live_in_question_folders():
    """Every benchmark script sits in a question folder with a README.md."""
    assert not benchmark_layout_problems(BENCHMARKS)


def test_the_benchmark_layout_check_can_fail(tmp_path):
    """The layout before the question folders: scripts and results/ at the top."""
    (tmp_path / "README.md").write_text("# Benchmarks\n")
    (tmp_path / "bench_pdf.py").write_text("")
    (tmp_path / "results").mkdir()
    (tmp_path / "speed").mkdir()
    (tmp_path / "speed" / "bench_annotate.py").write_text("")
    assert benchmark_layout_problems(tmp_path) == [
        "loose at the top: bench_pdf.py", "no README.md in results/", "no README.md in speed/"]


def script_root_problems(benchmarks: Path):
    """Shell scripts under ``benchmarks`` that ``cd "$(dirname "$0")/<up>"``
    to a folder other than the checkout's root (they run the checkout's
    configs and .venv from there)."""
    problems = []
    for script in sorted(benchmarks.rglob("*.sh")):
        for up in re.findall(r'cd "\$\(dirname "\$0"\)/([./]+)"', script.read_text(encoding="utf8")):
            if not (script.parent / up / "setup.py").is_file():
                problems.append(f"{script.relative_to(benchmarks)}: cd {up} is not the checkout's root")
    return problems


def test_benchmark_scripts_run_from_the_checkouts_root():
    assert not script_root_problems(BENCHMARKS)


def test_the_script_root_check_can_fail(tmp_path):
    """A script moved one folder down without its ``cd`` following it."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "benchmarks" / "fullpaper").mkdir(parents=True)
    (tmp_path / "benchmarks" / "fullpaper" / "run.sh").write_text('cd "$(dirname "$0")/.."\n')
    assert script_root_problems(tmp_path / "benchmarks") == ["fullpaper/run.sh: cd .. is not the checkout's root"]
