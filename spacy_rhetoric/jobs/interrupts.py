"""An interrupted job (Ctrl-C: SIGINT, ``kill``: SIGTERM) ends as cleanly as
a failed one: the exception unwinds the run, so its ``finally`` blocks
release the output lock and remove their temporary files, and the command
prints one line saying what is kept and how to resume, then exits with the
shell's code for the signal (130, 143)."""
import os
import signal
from contextlib import contextmanager
from typing import Callable, Iterator

# True inside sigterm_raises: a process forked there (an nlp.pipe worker) leaves
# Ctrl-C, which a terminal sends to every process of the group, to the run.
_IN_JOB = [False]


def _forked_worker() -> None:
    if _IN_JOB[0]:
        _IN_JOB[0] = False
        # the run unwinds and closes the worker's pipes; the worker then ends by itself
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_worker)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in this process
    (the main thread; elsewhere nothing changes). A process forked inside
    the block (``nlp.pipe`` workers) keeps the default for SIGTERM (it ends
    it) and ignores SIGINT: Ctrl-C reaches the whole process group, and the
    run, unwinding, ends its workers without their tracebacks."""
    try:
        previous = signal.getsignal(signal.SIGTERM)
        owner = os.getpid()

        def on_term(signum, frame):
            if os.getpid() != owner:  # a forked worker: end as before
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            raise Terminated(signum)

        signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread
        yield
        return
    _IN_JOB[0] = True
    try:
        yield
    finally:
        _IN_JOB[0] = False
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def report_interrupt(kept: Callable[[], str]) -> Iterator[None]:
    """Run a resumable job's command: on SIGINT or SIGTERM, print one line
    (``kept()``: what the interrupted run leaves, e.g. "12 finished inputs
    in OUT/shards") saying that rerunning the same command resumes, and exit
    with 128 + the signal's number."""
    try:
        with sigterm_raises():
            yield
    except KeyboardInterrupt as err:
        from wasabi import msg

        signum = err.signum if isinstance(err, Terminated) else signal.SIGINT
        name = signal.Signals(signum).name
        try:
            what = kept()
        except OSError:
            what = "what was finished"
        msg.warn(f"Interrupted ({name}): {what} kept; run the same command again to resume")
        raise SystemExit(128 + signum) from None


def finished_shards(shard_dir) -> str:
    """``"N finished inputs in SHARD_DIR"`` (shards counted once, now)."""
    from pathlib import Path

    from ..io import path_text

    try:
        with os.scandir(shard_dir) as it:
            n = sum(1 for entry in it if entry.name.endswith(".jsonl") and not entry.name.startswith("."))
    except FileNotFoundError:
        n = 0
    return f"{n} finished input{'s' if n != 1 else ''} in {path_text(Path(shard_dir))}"
