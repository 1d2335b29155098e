"""``nlp.pipe(n_process=2)`` with torch models in the pipeline: forked
workers must not wait on the parent's OpenMP thread pool."""
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import spacy
    import torch
    from spacy.language import Language

    import spacy_rhetoric  # noqa: F401 - the fork hook is installed on import

    torch.set_num_threads(2)
    weights = torch.randn(384, 384)
    for _ in range(3):  # the parent's thread pool is started, as a loaded pipeline's first doc does
        (weights @ weights).sum()

    @Language.component("torch_sum")
    def torch_sum(doc):
        doc.user_data["sum"] = float((weights @ weights).sum())
        return doc

    nlp = spacy.blank("en")
    nlp.add_pipe("torch_sum")
    docs = list(nlp.pipe(["One text.", "Two texts.", "Three.", "Four."], n_process=2, batch_size=1))
    assert [d.text for d in docs] == ["One text.", "Two texts.", "Three.", "Four."]
    assert all(isinstance(d.user_data["sum"], float) for d in docs)
    print("PIPE-OK")
''')


def test_n_process_with_torch_does_not_hang(tmp_path):
    script = tmp_path / "pipe.py"
    script.write_text(SCRIPT, encoding="utf8")
    try:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as err:  # pragma: no cover - the failure this test guards against
        raise AssertionError("nlp.pipe(n_process=2) hung with torch in the workers") from err
    assert out.returncode == 0, out.stderr[-2000:]
    assert "PIPE-OK" in out.stdout


def test_fork_hook_sets_one_thread_in_the_child():
    import os

    import torch

    import spacy_rhetoric  # noqa: F401

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, str(torch.get_num_threads()).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 16) == b"1"
