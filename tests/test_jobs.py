"""The corpus-job machinery (``spacy_rhetoric.jobs``): inputs, shards, the
settings record, the output lock, the merge order and interrupts, on their
own (``test_corpus_builder``, ``test_annotate`` and ``test_reliability_*`` run
them through label, annotate and index)."""
import json
import os
import signal

import pytest

from spacy_rhetoric.io import OutputLockedError
from spacy_rhetoric.jobs import CorpusBuildError, InputFile, discover_inputs
from spacy_rhetoric.jobs.interrupts import Terminated, finished_shards, report_interrupt, sigterm_raises
from spacy_rhetoric.jobs.merge import concatenate_shards, shard_records
from spacy_rhetoric.jobs.settings import LABEL_FILES, LOCK_FILE, lock_build, prepare_output_dir
from spacy_rhetoric.jobs.shards import earlier_shards, read_shard, read_shard_header, shard_path, write_shard

XML = '<PAPER>\n<S sid="0">t</S>\n<ABSTRACT>\n    <S sid ="1" ssid = "1">A sentence.</S>\n</ABSTRACT>\n</PAPER>\n'


def test_inputs_below_symlinked_directories_are_found(tmp_path):
    """The offline asset mirror links corpus directories: follow the links."""
    real = tmp_path / "real" / "T1" / "Reference_XML"
    real.mkdir(parents=True)
    (real / "T1.xml").write_text(XML, encoding="utf8")
    (tmp_path / "mirror").mkdir()
    (tmp_path / "mirror" / "topics").symlink_to(tmp_path / "real", target_is_directory=True)
    linked = discover_inputs([tmp_path / "mirror"])
    assert [i.key for i in linked] == ["topics/T1/Reference_XML/T1.xml"]
    direct = discover_inputs([tmp_path / "real"])
    assert [i.key for i in direct] == ["T1/Reference_XML/T1.xml"]


def test_a_folder_reached_directly_keeps_its_own_path(tmp_path):
    """A folder below the input and a link to it: its files once, under the folder's own path."""
    (tmp_path / "in" / "real").mkdir(parents=True)
    (tmp_path / "in" / "real" / "a.txt").write_text("A sentence.\n", encoding="utf8")
    (tmp_path / "in" / "alias").symlink_to("real", target_is_directory=True)  # sorts before "real"
    assert [i.key for i in discover_inputs([tmp_path / "in"])] == ["real/a.txt"]


def test_unusable_inputs_recorded_only_when_asked(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("A sentence.\n", encoding="utf8")
    os.mkfifo(src / "b.txt")
    (src / "c.txt").symlink_to("missing.txt")
    skipped = []
    found = discover_inputs([src], skipped=skipped)
    assert [i.key for i in found] == ["a.txt"] and len(found[0].fingerprint) == 40
    assert [s["input"] for s in skipped] == ["b.txt", "c.txt"]
    assert "FIFO" in skipped[0]["reason"] and "No such file" in skipped[1]["reason"]
    assert [i.key for i in discover_inputs([src])] == ["a.txt"]
    with pytest.raises(CorpusBuildError, match="no input files"):
        discover_inputs([tmp_path / "in"], kind_of=lambda path: None)


def _inp(key: str, content: str) -> InputFile:
    import hashlib

    return InputFile(key=key, path=None, kind="txt", fingerprint=hashlib.sha1(content.encode()).hexdigest())


@pytest.mark.parametrize("listed", [True, False])
def test_a_new_shard_replaces_the_earlier_versions_of_its_input(tmp_path, listed):
    old, new, other = _inp("a/paper.txt", "v1"), _inp("a/paper.txt", "v2"), _inp("b/paper.txt", "v1")
    write_shard(tmp_path, old, {"n": 1}, [{"text": "x"}], docs=b"docbin")
    write_shard(tmp_path, other, {"n": 1}, [{"text": "y"}])
    (tmp_path / ".tmp-junk.jsonl.123").write_text("{")
    earlier = earlier_shards(tmp_path)
    assert sorted(p.name for p in earlier[old.shard_prefix]) == sorted(
        [old.shard_name, old.shard_name.replace(".jsonl", ".spacy")])
    write_shard(tmp_path, new, {"n": 2}, [{"text": "z"}],
                earlier=earlier.get(new.shard_prefix, ()) if listed else None)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted([".tmp-junk.jsonl.123", new.shard_name, other.shard_name])
    header, records = read_shard(shard_path(tmp_path, new))
    assert header == {"n": 2} == read_shard_header(shard_path(tmp_path, new))
    assert list(records) == [{"text": "z", "input": "a/paper.txt"}]


def test_shards_merge_in_input_order(tmp_path):
    a, b, missing = _inp("a.txt", "1"), _inp("b.txt", "2"), _inp("c.txt", "3")
    write_shard(tmp_path, b, {}, [{"i": 2}, {"i": 3}])
    write_shard(tmp_path, a, {}, [{"i": 1}])
    assert [r["i"] for r in shard_records(tmp_path, [a, b, missing])] == [1, 2, 3]
    out = concatenate_shards(tmp_path, [a, b], jsonl=tmp_path / "all.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert out == {"jsonl": str(tmp_path / "all.jsonl")} and [r["i"] for r in lines] == [1, 2, 3]


def test_the_settings_record_and_the_lock(tmp_path):
    out = tmp_path / "out"
    with lock_build(out):
        assert (out / LOCK_FILE).exists()
        with pytest.raises(OutputLockedError, match="another run"):
            with lock_build(out):
                pass
        shard_dir = prepare_output_dir(out, {"a": 1}, overwrite=False)
        (shard_dir / "x-0123456789ab-0123.jsonl").write_text("{}\n")
        (shard_dir / ".tmp-x.jsonl.99").write_text("{")
        assert prepare_output_dir(out, {"a": 1}, overwrite=False) == shard_dir  # resume: same settings
        assert [p.name for p in shard_dir.iterdir()] == ["x-0123456789ab-0123.jsonl"]  # temp files gone
        with pytest.raises(CorpusBuildError, match=r"different settings \(a\)"):
            prepare_output_dir(out, {"a": 2}, overwrite=False)
        prepare_output_dir(out, {"a": 2}, overwrite=True)
        assert not list(shard_dir.iterdir())
    assert not (out / LOCK_FILE).exists()


def test_label_outputs_are_never_inputs():
    from spacy_rhetoric.corpus_builder.settings import OUTPUT_NAMES

    assert set(LABEL_FILES) == {f"{name}.{ext}" for name in OUTPUT_NAMES for ext in ("jsonl", "spacy")}


@pytest.mark.parametrize("error,code,name", [(KeyboardInterrupt(), 130, "SIGINT"),
                                             (Terminated(signal.SIGTERM), 143, "SIGTERM")])
def test_an_interrupt_is_one_line_and_its_exit_code(tmp_path, capsys, error, code, name):
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "a-0123456789ab-0123.jsonl").write_text("{}\n")
    with pytest.raises(SystemExit) as exit_info:
        with report_interrupt(lambda: finished_shards(tmp_path / "shards")):
            raise error
    assert exit_info.value.code == code
    out = " ".join(capsys.readouterr().out.split())
    assert f"Interrupted ({name}): 1 finished input in {tmp_path / 'shards'} kept; run the same command again " \
           "to resume" in out


def test_sigterm_raises_inside_the_block_only():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated):
        with sigterm_raises():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs between bytecodes
                pass
    assert signal.getsignal(signal.SIGTERM) == before
