"""The driver of a build: check the arguments and paths before any work,
discover inputs, label the pending ones, merge, write ``summary.json``."""
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..io import atomic_write_json, check_input, check_output
from ..jobs import progress_bar
from ..jobs.common import CorpusBuildError
from ..jobs.inputs import discover_inputs
from ..jobs.settings import (
    SUMMARY_FILE,
    OnShard,
    check_build_dir,
    import_code,
    lock_build,
    prepare_output_dir,
    remove_failed_build,
)
from ..jobs.shards import read_shard_header, shard_path
from ..util import DEFAULT_PARSER, load_parser
from .labeling import build_nlp
from .merge import merge_shards, output_paths
from .runners import run_dask, run_local
from .settings import DEFAULT_EXCLUDE, LabelSettings, phrases_digest, read_phrase_list

PhraseArg = Union[str, Path, Sequence[Tuple[str, str]]]


@dataclass(frozen=True)
class BuildSettings:
    """The options of a label build (``spacy-rhetoric label``'s).

    What determines the labels (:meth:`labels`, recorded in
    build_config.json; resuming with others is refused): ``parser``, ``n``
    (phrase n-gram length), ``min_phrase_length`` (None: ``n``), ``exclude``
    (parser components left out), ``code`` (a Python file imported first,
    on Dask workers too). The split: ``seed``, ``valid_fraction`` (share of
    the papers in validation). How it runs: ``n_process`` processes of one
    ``nlp.pipe`` stream, ``batch_size`` sentences per batch, ``scheduler``
    (None: this machine; ``"local"``: a Dask LocalCluster of ``workers``
    single-threaded processes; else a scheduler address ``tcp://host:port``),
    ``limit`` (only the first N input files, 0 = all), ``overwrite``
    (discard an earlier build's shards instead of resuming), ``merge_only``
    (label nothing, merge the shards that exist: a snapshot of an unfinished
    build), ``force`` (replace output files that no label run wrote)."""

    parser: str = DEFAULT_PARSER
    n: int = 5
    min_phrase_length: Optional[int] = None
    exclude: Sequence[str] = DEFAULT_EXCLUDE
    code: Optional[Union[str, Path]] = None
    n_process: int = 1
    batch_size: int = 256
    scheduler: Optional[str] = None
    workers: int = 2
    seed: int = 0
    valid_fraction: float = 0.2
    limit: int = 0
    overwrite: bool = False
    merge_only: bool = False
    force: bool = False

    def labels(self) -> LabelSettings:
        """What determines the labels, as the labeling pipeline and the Dask
        workers take it (``min_phrase_length`` None -> ``n``)."""
        n = int(self.n)
        return LabelSettings(parser=self.parser, n=n, exclude=tuple(self.exclude),
                             code=str(self.code) if self.code else None,
                             min_phrase_length=int(self.min_phrase_length) if self.min_phrase_length else n)


def check_build_args(inputs: Sequence[Union[str, Path]], out_dir: Path, *, phrases: PhraseArg,
                     settings: BuildSettings) -> None:
    """Every argument and path a build needs, checked before any work: an
    error (``PathError`` or ``CorpusBuildError``) that names what is wrong."""
    if not inputs:
        raise CorpusBuildError("no inputs given")
    for path in inputs:
        check_input(path, what="input", dir_ok=True)
    # inside an input folder is fine: a build never reads the files of a build
    check_output(out_dir, what="output directory", inputs=inputs, dir_ok=True, inside_ok=inputs)
    for path in output_paths(out_dir).values():
        if path.is_dir():
            raise CorpusBuildError(f"output {path} is an existing directory, expected a file path")
    check_build_dir(out_dir, [p.name for p in output_paths(out_dir).values()] + [SUMMARY_FILE], settings.force)
    if isinstance(phrases, (str, Path)):
        check_input(phrases, what="phrase list", dir_ok=True)
    if settings.code:
        check_input(settings.code, what="--code file")
    for name in ("n", "n_process", "batch_size", "workers"):
        if int(getattr(settings, name)) < 1:
            raise CorpusBuildError(f"{name} must be at least 1, got {getattr(settings, name)}")
    if not 0.0 < settings.valid_fraction < 1.0:
        raise CorpusBuildError(f"valid_fraction must be in (0, 1), got {settings.valid_fraction}")
    min_phrase_length, n = settings.min_phrase_length, settings.n
    if min_phrase_length is not None and not 1 <= int(min_phrase_length) <= int(n):
        raise CorpusBuildError(f"min_phrase_length must be in 1..n={n}, got {min_phrase_length}")


def build_corpus(inputs: Sequence[Union[str, Path]], output_dir: Union[str, Path], phrases: PhraseArg,
                 settings: BuildSettings = BuildSettings(), *, show_progress: bool = False,
                 on_shard: OnShard = None) -> Dict[str, Any]:
    """Label a corpus with the ``phrases`` list (a file or folder of the
    phrase database, or ``(label, phrase)`` pairs) and write the
    distant-supervision set to ``output_dir``, with the options of
    ``settings`` (:class:`BuildSettings`). ``show_progress``: a progress
    bar. ``on_shard(input, header)`` is called after each shard is written.
    With ``settings.merge_only`` ``inputs_pending`` says how many inputs are
    missing. The files of a label build (this one's or another's) are never
    inputs. Raises ``CorpusBuildError`` when no input is usable. Returns the
    summary (also written to summary.json).
    """
    out_dir = Path(output_dir)
    check_build_args(inputs, out_dir, phrases=phrases, settings=settings)
    import_code(settings.code)
    labels = settings.labels()
    parser, n, min_phrase_length, exclude = labels.parser, labels.n, labels.min_phrase_length, settings.exclude
    scheduler, batch_size, merge_only = settings.scheduler, settings.batch_size, settings.merge_only
    pairs, n_phrase_skipped = read_phrase_list(phrases)
    if not pairs:
        raise CorpusBuildError(f"the phrase list {phrases!r} holds no (label, phrase) pairs")
    unreadable: List[Dict[str, str]] = []  # skipped and counted, never opened (FIFOs, ...) or unopenable
    all_inputs = discover_inputs(inputs, limit=settings.limit, exclude=[out_dir], skipped=unreadable)
    config = {
        "parser": parser,
        "n": int(n),
        "min_phrase_length": min_phrase_length,
        "exclude": sorted(exclude),
        "phrases_sha1": phrases_digest(pairs),
        "n_phrases": len(pairs),
    }
    created = not out_dir.exists()
    with lock_build(out_dir):  # one run at a time on an output folder
        shard_dir = prepare_output_dir(out_dir, config, settings.overwrite)

        pending = [inp for inp in all_inputs if not shard_path(shard_dir, inp).exists()]
        skipped: List[Dict[str, str]] = list(unreadable)
        progress = progress_bar(show_progress, total=len(all_inputs), initial=len(all_inputs) - len(pending),
                                desc="label")
        try:
            if not pending or merge_only:
                n_done, n_words, label_seconds = 0, 0, 0.0
            elif scheduler:
                n_done, n_words, label_seconds = run_dask(
                    scheduler, settings.workers, labels, pairs, pending, shard_dir, skipped,
                    batch_size=batch_size, on_shard=on_shard, progress=progress,
                )
            else:
                n_done, n_words, label_seconds = run_local(
                    build_nlp(labels, pairs), pending, shard_dir, skipped,
                    n_process=settings.n_process, batch_size=batch_size, on_shard=on_shard, progress=progress,
                )
        except ValueError:  # e.g. no n-gram left for --n: nothing labeled, nothing left behind
            remove_failed_build(out_dir, created)
            raise
        finally:
            progress.close()

        totals: Counter = Counter()
        bad_records: List[str] = []
        paper_ids = set()
        n_with_shard = 0
        for inp in all_inputs:
            path = shard_path(shard_dir, inp)
            if not path.exists():
                continue
            n_with_shard += 1
            header = read_shard_header(path)
            for k in ("n_source_sentences", "n_sentences", "n_empty", "n_words", "n_labeled", "n_bad_records"):
                totals[k] += header[k]
            paper_ids.update(header["papers"])
            bad_records.extend(header["bad_records"][: max(0, 20 - len(bad_records))])
        n_pending = len(pending) if merge_only else 0
        n_inputs = len(all_inputs) + len(unreadable)
        if n_with_shard + len(skipped) + n_pending != n_inputs:  # pragma: no cover - bookkeeping invariant
            raise RuntimeError("inputs in != inputs labeled + skipped")
        if not n_with_shard:
            if merge_only:
                raise CorpusBuildError(f"{out_dir} holds no labeled input yet: nothing to merge (run without --merge-only)")
            remove_failed_build(out_dir, created)
            raise CorpusBuildError(
                f"none of the {n_inputs} inputs is usable"
                + (f" (e.g. {skipped[0]['reason']})" if skipped else "")
            )

        # The parser's own tokenizer (loaded with the pipeline, components unused)
        # re-creates the labeled tokens exactly, so n-gram offsets stay valid.
        tokenizer_nlp = load_parser(parser, exclude=list(exclude))
        merged = merge_shards(out_dir, all_inputs, shard_dir, tokenizer_nlp, seed=settings.seed,
                              valid_fraction=settings.valid_fraction)
        summary = {
            "inputs": n_inputs,
            "inputs_labeled": n_with_shard,
            "inputs_labeled_this_run": n_done,
            "inputs_resumed": len(all_inputs) - len(pending),
            "inputs_pending": n_pending,
            "inputs_skipped": len(skipped),
            "skipped": skipped,
            "papers": len(paper_ids),
            "source_sentences": totals["n_source_sentences"],
            "empty_sentences": totals["n_empty"],
            "sentences": totals["n_sentences"],
            "words": totals["n_words"],
            "bad_records": totals["n_bad_records"],
            "bad_record_examples": bad_records,
            "labeled": totals["n_labeled"],
            **merged,
            "phrases": {"pairs": len(pairs), "skipped_lines": n_phrase_skipped, "sha1": config["phrases_sha1"]},
            "settings": {
                "parser": parser, "n": int(n), "min_phrase_length": min_phrase_length,
                "exclude": sorted(exclude), "n_process": settings.n_process,
                "batch_size": batch_size, "scheduler": scheduler, "workers": settings.workers if scheduler else None,
                "seed": settings.seed,
            },
            "timing": {
                "label_seconds": round(label_seconds, 3),
                "words_labeled_this_run": n_words,
                "words_per_second": round(n_words / label_seconds, 1) if n_words and label_seconds > 0 else None,
            },
        }
        atomic_write_json(out_dir / SUMMARY_FILE, summary)
        return summary
