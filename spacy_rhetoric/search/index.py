"""Build, resume and query a rhetorical search index (the on-disk layout
and the design are in the package docstring, ``spacy_rhetoric.search``)."""
import json
import os
import shutil
import sqlite3
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy

from .. import extensions as ext
from ..evaluation.neighbours import as_matrix, l2_normalize
from ..io import (
    PathError,
    atomic_path,
    atomic_write_json,
    check_input,
    check_output,
    disk_full,
    output_lock,
    path_text,
    remove_stale_temps,
)
from ..jobs.local import bounded_processes
from .faiss_index import (
    IndexBuildError,
    build_faiss_index,
    check_index_type,
    pipeline_dim,
    search_index,
    set_search_params,
)
from .sources import (
    PathLike,
    SearchIndexError,
    corpus_files,
    encode_papers,
    iter_corpus,
    iter_parts,
    load_pipeline,
    not_for_vectors,
)
from .store import FILTERS, INVALID, Hit, _connect, add_part, check_store, fetch_hit

INDEX_FILE = "index.faiss"


META_FILE = "sentences.sqlite"


CONFIG_FILE = "index.json"


BUILD_FILE = "build.json"


VECTOR_DIR = "vectors"


WORK_SUFFIX = ".tmp-dir"


FORMAT_VERSION = 2  # 2: the input column (the corpus file of each sentence)


DEFAULT_PART_SENTENCES = 2000


def work_dir(index_path: PathLike) -> Path:
    path = Path(index_path)
    return path.with_name(path.name + WORK_SUFFIX)


def check_index_output(index_path: PathLike, inputs: Sequence[PathLike] = ()) -> Path:
    """The index directory can be written: not an input, not a file, and if it
    exists, a previous index (replaced) — never another directory."""
    path = check_output(index_path, what="index", inputs=inputs, dir_ok=True)
    for inp in inputs:
        if Path(inp).resolve() in path.resolve().parents:
            raise PathError(f"index {path} is inside the corpus folder {inp}; choose another path")
    if path.exists() and any(path.iterdir()) and not (path / CONFIG_FILE).exists():
        raise PathError(f"index {path} exists and is not a spacy-rhetoric index; choose another path")
    work = work_dir(path)
    if work.exists() and not work.is_dir():
        raise PathError(f"{work} exists and is not a directory")
    return path


def _build_settings(model: PathLike, nlp, files: Sequence[Path], part_sentences: int) -> Dict[str, Any]:
    """What a resumed build must match; an input that cannot be read has no
    fingerprint (``sha1`` None: it is skipped and counted when read)."""
    from ..jobs.inputs import fingerprint_or_reason

    return {
        "format": FORMAT_VERSION,
        "pipeline": str(Path(model).resolve()) if Path(model).exists() else str(model),
        "part_sentences": part_sentences,
        "inputs": [{"path": path_text(p.resolve()), "sha1": fingerprint_or_reason(p)[1] or None} for p in files],
    }


def _start_work(work: Path, settings: Dict[str, Any], overwrite: bool) -> bool:
    """Create or reuse the work directory; True when resuming (never with
    ``overwrite``: an unfinished build is discarded)."""
    build_file = work / BUILD_FILE
    if not overwrite and work.exists() and build_file.exists():
        try:
            previous = json.loads(build_file.read_text(encoding="utf8"))
        except ValueError:
            previous = None
        if previous == settings:
            return True
        if not overwrite:
            raise SearchIndexError(
                f"{work} holds an unfinished build with other inputs, pipeline or part size; "
                "pass --overwrite to start again (or remove it)"
            )
    if work.exists():
        shutil.rmtree(work)
    (work / VECTOR_DIR).mkdir(parents=True)
    atomic_write_json(build_file, settings)
    return False


def _resume_store(work: Path) -> sqlite3.Connection:
    """The store of an unfinished build, checked: the columns this version
    writes, every part it marks done with its vectors file, as many rows as
    its parts say; a ``SearchIndexError`` that says to pass --overwrite otherwise."""
    path = work / META_FILE
    con = None
    try:
        con = _connect(path)
        check_store(con, path, tables=("sentences", "parts"))
        parts = con.execute("SELECT part, n FROM parts").fetchall()
        missing = [part for part, _ in parts if not _part_file(work, part).is_file()]
        if missing:
            raise SearchIndexError(f"it marks part {missing[0]} done but {_part_file(work, missing[0])} is missing")
        n_rows = con.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
        if n_rows != sum(n for _, n in parts):
            raise SearchIndexError(f"it holds {n_rows} sentences, its parts {sum(n for _, n in parts)}")
    except (sqlite3.Error, SearchIndexError) as err:
        if con is not None:
            con.close()
        raise SearchIndexError(f"{path_text(work)} holds a damaged unfinished build ({err}); pass --overwrite "
                               "to discard it and start again") from None
    return con


def _part_file(work: Path, part: int) -> Path:
    return work / VECTOR_DIR / f"part-{part:06d}.npy"


def _save_part(work: Path, con, part: int, vectors: numpy.ndarray, rows, n_papers: int) -> None:
    with atomic_path(_part_file(work, part)) as tmp:
        with tmp.open("wb") as fh:
            numpy.save(fh, numpy.ascontiguousarray(vectors, dtype="float32"), allow_pickle=False)
    add_part(con, part, rows, n_papers)


Encoder = Callable[[List[Dict[str, Any]]], Tuple[numpy.ndarray, List[Dict[str, Any]]]]


def build_index(
    model: PathLike,
    corpus: Sequence[PathLike],
    index_path: PathLike,
    *,
    index_type: str = "auto",
    part_sentences: int = DEFAULT_PART_SENTENCES,
    batch_size: int = 16,
    n_process: int = 1,
    scheduler: Optional[str] = None,
    workers: int = 2,
    overwrite: bool = False,
    progress: bool = True,
    stop_after_parts: Optional[int] = None,
    seed: int = 0,
    read_timeout: Optional[float] = None,
) -> Dict[str, Any]:
    """Encode every sentence of ``corpus`` with the pipeline ``model`` into an
    index at ``index_path`` (see the module docstring); returns a summary.
    ``read_timeout``: seconds one paper file may take to read, else it is
    skipped and counted (None: ``readers.budget.READ_TIMEOUT``).
    ``n_process``: worker processes of each part's ``nlp.pipe`` (bounded by
    the CPUs; 1 on a GPU).
    ``stop_after_parts`` stops after that many newly encoded parts, leaving
    the work directory for a rerun (tests, time-boxed runs)."""
    from tqdm import tqdm

    from ..readers.common import ReadStats

    if part_sentences < 1 or batch_size < 1 or n_process < 1:
        raise SearchIndexError("part_sentences, batch_size and n_process must be at least 1")
    # never inside the corpus folders nor inside the pipeline directory
    index_path = check_index_output(index_path, [*corpus, *([model] if Path(model).is_dir() else [])])
    files = corpus_files(corpus)
    nlp = load_pipeline(model)
    check_index_type(index_type, pipeline_dim(nlp))
    work = work_dir(index_path)
    settings = _build_settings(model, nlp, files, part_sentences)
    # one run at a time on an output; a full disk while the store is written: one line
    with output_lock(index_path.with_name(f".{index_path.name}.lock"), f"index {index_path}"), \
            disk_full(work / META_FILE):
        remove_stale_temps(index_path.parent, index_path.name)  # what killed runs left beside it
        if not overwrite and (work / CONFIG_FILE).exists() and (work / BUILD_FILE).exists() and \
                json.loads((work / BUILD_FILE).read_text("utf8")) == settings:
            return _finish(work, index_path)  # interrupted after the index was written
        resumed = _start_work(work, settings, overwrite)
        con = _resume_store(work) if resumed else _connect(work / META_FILE)
        done = {row[0] for row in con.execute("SELECT part FROM parts")}
        stats = ReadStats(name="corpus files")
        started = time.perf_counter()
        n_new = 0
        bar = tqdm(desc="encode", unit="sent", disable=not progress or None)
        n_process = bounded_processes(n_process) if not scheduler else 1
        encode: Encoder = lambda papers: encode_papers(nlp, papers, batch_size=batch_size,  # noqa: E731
                                                       n_process=n_process)
        parts = ((i, p) for i, p in enumerate(iter_parts(iter_corpus(corpus, nlp, stats, read_timeout), part_sentences)))
        try:
            if scheduler:
                n_new = _run_dask(scheduler, workers, settings["pipeline"], batch_size, parts, done, work, con, bar,
                                  stop_after_parts)
            else:
                for i, papers in parts:
                    if i in done:
                        bar.update(sum(len(p["sentences"]) for p in papers))
                        continue
                    if stop_after_parts is not None and n_new >= stop_after_parts:
                        break
                    vectors, rows = encode(papers)
                    _save_part(work, con, i, vectors, rows, len(papers))
                    n_new += 1
                    bar.update(sum(len(p["sentences"]) for p in papers))
        finally:
            bar.close()
            con.close()
        summary = {"resumed": resumed, "parts_encoded": n_new, "parts_reused": len(done),
                   "encode_seconds": round(time.perf_counter() - started, 3),
                   "files_read": stats.read, "files_skipped": stats.skipped, "skipped": stats.examples,
                   "papers": stats.docs}
        if stop_after_parts is not None and n_new >= stop_after_parts:
            summary["finished"] = False
            return summary
        summary.update(_write_index(work, nlp, settings, index_type, seed))
        summary.update(_finish(work, index_path))
        return summary


def _write_index(work: Path, nlp, settings: Dict[str, Any], index_type: str, seed: int) -> Dict[str, Any]:
    import faiss

    con = _connect(work / META_FILE)
    try:
        parts = con.execute("SELECT part, first_id, n FROM parts ORDER BY first_id").fetchall()
        n = sum(p[2] for p in parts)
        if not n:
            raise SearchIndexError("no sentence of the corpus got a vector: nothing to index")
        blocks = [numpy.load(_part_file(work, p), allow_pickle=False) for p, _, k in parts if k]
        vectors = l2_normalize(numpy.vstack(blocks))
        del blocks
        started = time.perf_counter()
        try:
            index, factory, params = build_faiss_index(vectors, index_type, seed=seed)
        except IndexBuildError:
            con.close()
            shutil.rmtree(work, ignore_errors=True)  # nothing to resume: another index type starts afresh
            raise
        build_seconds = time.perf_counter() - started
        with con:
            for column in FILTERS.values():
                con.execute(f"CREATE INDEX IF NOT EXISTS sentences_{column} ON sentences ({column} COLLATE NOCASE)")
    finally:
        con.close()
    with atomic_path(work / INDEX_FILE) as tmp:
        faiss.write_index(index, str(tmp))
    meta = {k: nlp.meta.get(k) for k in ("lang", "name", "version", "description")}
    meta["components"] = list(nlp.pipe_names)
    config = {
        "format": FORMAT_VERSION, "pipeline": settings["pipeline"], "pipeline_meta": meta,
        "dim": int(vectors.shape[1]), "n": int(n), "factory": factory, "params": params,
        "metric": "inner_product (cosine of unit vectors)", "inputs": settings["inputs"],
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    atomic_write_json(work / CONFIG_FILE, config)
    return {"n": int(n), "dim": int(vectors.shape[1]), "factory": factory,
            "index_seconds": round(build_seconds, 3)}


def _finish(work: Path, index_path: Path) -> Dict[str, Any]:
    """Remove the part vectors and rename the work directory into place."""
    shutil.rmtree(work / VECTOR_DIR, ignore_errors=True)
    (work / BUILD_FILE).unlink(missing_ok=True)
    old = index_path.with_name(f".old-{index_path.name}.{os.getpid()}")
    if index_path.exists():
        os.replace(index_path, old)
    os.replace(work, index_path)
    shutil.rmtree(old, ignore_errors=True)
    config = json.loads((index_path / CONFIG_FILE).read_text(encoding="utf8"))
    return {"index": str(index_path), "n": config["n"], "dim": config["dim"], "factory": config["factory"],
            "finished": True}


def _run_dask(scheduler: str, workers: int, pipeline: str, batch_size: int, parts, done, work: Path, con, bar,
              stop_after_parts: Optional[int]) -> int:
    """Encode the pending parts on a Dask cluster with the project's job
    runner (``jobs.dask_tasks``: ``"local"`` is a LocalCluster of
    ``workers`` processes, else a scheduler address; at most two tasks per
    worker in flight); the client writes every part as it comes back.
    Workers need spacy_rhetoric and the pipeline at the same path."""
    from ..jobs import dask_tasks

    submitted, n_new = [0], [0]

    def read(part):
        i, papers = part
        if i in done:
            bar.update(sum(len(p["sentences"]) for p in papers))
            return None
        if stop_after_parts is not None and submitted[0] >= stop_after_parts:
            return None
        submitted[0] += 1
        return papers

    def finish(part, papers, result):
        vectors, rows = result
        _save_part(work, con, part[0], vectors, rows, len(papers))
        n_new[0] += 1
        bar.update(sum(len(p["sentences"]) for p in papers))

    dask_tasks(scheduler, workers, parts, pipeline=(load_pipeline, (pipeline,)), read=read,
               work=partial(encode_papers, batch_size=batch_size), work_args=lambda part, papers: (papers,),
               finish=finish, name="encode", task_key=lambda part: str(part[0]))
    return n_new[0]


def _section_clause(section: str) -> Tuple[str, List[str]]:
    """The SQL test of ``--section``: the section category, or words of the
    raw heading ("Introduction" ~ "1 Introduction")."""
    like = "%" + section.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return "(section = ? COLLATE NOCASE OR heading LIKE ? ESCAPE '\\')", [section, like]


class RhetoricIndex:
    """A built index: ``RhetoricIndex.load(path).search(query, k=10, label=..., section=..., paper=...)``."""

    def __init__(self, path: Path, index, config: Dict[str, Any], con: sqlite3.Connection):
        self.path = path
        self.index = index
        self.config = config
        self.con = con
        self._nlp = None

    @classmethod
    def load(cls, path: PathLike) -> "RhetoricIndex":
        import faiss

        path = check_input(path, what="index", file_ok=False, dir_ok=True)
        for name in (CONFIG_FILE, INDEX_FILE, META_FILE):
            if not (path / name).is_file():
                raise SearchIndexError(f"{path} is not a spacy-rhetoric index: {name} is missing")
        try:
            config = json.loads((path / CONFIG_FILE).read_text(encoding="utf8"))
        except ValueError as err:
            raise SearchIndexError(f"{path / CONFIG_FILE}: invalid JSON ({err})") from err
        if not isinstance(config, dict):
            raise SearchIndexError(f"{path / CONFIG_FILE}: expected a JSON object")
        missing = [key for key in ("pipeline", "dim", "n", "factory") if key not in config]
        if missing:
            raise SearchIndexError(f"{path / CONFIG_FILE}: field {missing[0]!r} is missing (edited by hand?); "
                                   "rebuild the index with spacy-rhetoric index")
        try:
            index = faiss.read_index(str(path / INDEX_FILE))
        except RuntimeError as err:
            raise SearchIndexError(f"{path / INDEX_FILE}: cannot read the faiss index ({err})") from err
        set_search_params(index, config.get("params", {}))
        con = sqlite3.connect(f"file:{path / META_FILE}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        try:
            check_store(con, path / META_FILE, input_column=config.get("format", 1) >= 2)
            n_rows, low, high = con.execute("SELECT COUNT(*), MIN(id), MAX(id) FROM sentences").fetchone()
        except (sqlite3.Error, SearchIndexError) as err:
            con.close()
            if isinstance(err, SearchIndexError):
                raise
            raise SearchIndexError(f"{INVALID}: {path / META_FILE} is not a spacy-rhetoric metadata store "
                                   f"({err})") from None
        if n_rows != index.ntotal or (n_rows and (low, high) != (0, n_rows - 1)):
            con.close()
            raise SearchIndexError(f"{INVALID}: the metadata store {path / META_FILE} has {n_rows} sentences "
                                   f"(ids {low} to {high}) but the index {index.ntotal} (ids 0 to {index.ntotal - 1})")
        return cls(path, index, config, con)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @property
    def nlp(self):
        """The pipeline the index was built with (loaded on first use)."""
        if self._nlp is None:
            self._nlp = load_pipeline(self.config["pipeline"])
        return self._nlp

    def encode(self, texts: Union[str, Sequence[str]]) -> numpy.ndarray:
        """Vectors ``[n, d]`` of query sentences, each encoded as a one-sentence Doc."""
        from ..readers.common import doc_from_sentences

        texts = [texts] if isinstance(texts, str) else list(texts)
        if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
            raise SearchIndexError("a query must be a non-empty sentence")
        nlp = self.nlp
        docs = [doc_from_sentences(nlp, [t]) for t in texts]
        with nlp.select_pipes(disable=not_for_vectors(nlp)):
            docs = list(nlp.pipe(docs))
        out = []
        for text, doc in zip(texts, docs):
            vector = ext.get_span_value(doc[:], ext.VECTOR)
            if vector is None:
                raise SearchIndexError(f"the pipeline gave no rhetoric_vector for the query {text!r}")
            out.append(vector)
        return numpy.vstack(out).astype("float32")

    def record(self, id_: int) -> Hit:
        hit = fetch_hit(self.con, self.path / META_FILE, id_, float("nan"))
        if hit is None:
            raise KeyError(id_)
        return hit

    def vector(self, id_: int) -> numpy.ndarray:
        return self.index.reconstruct(int(id_))

    def allowed_ids(self, *, label: Optional[str] = None, section: Optional[str] = None,
                    paper: Optional[str] = None) -> Optional[numpy.ndarray]:
        """Ids matching the filters (case-insensitive; ``section`` also
        matches a raw heading that contains it), or None without filters."""
        where, args = [], []
        for column, value in (("label", label), ("paper", paper)):
            if value is not None:
                where.append(f"{column} = ? COLLATE NOCASE")
                args.append(value)
        if section is not None:  # the section category, or words of the raw heading ("Introduction" ~ "1 Introduction")
            clause, values = _section_clause(section)
            where.append(clause)
            args.extend(values)
        if not where:
            return None
        rows = self.con.execute(f"SELECT id FROM sentences WHERE {' AND '.join(where)}", args).fetchall()
        if not rows:
            self._check_filter_values(label=label, section=section, paper=paper)
        return numpy.asarray([r[0] for r in rows], dtype="int64")

    def _check_filter_values(self, **filters: Optional[str]) -> None:
        """A filter value no indexed sentence has (a typo such as
        ``--label objectve``, ``--section methods``): one line listing the
        values the index has. Values that each match but not together are
        no error (no sentence matches the filters)."""
        for name, value in filters.items():
            if value is None:
                continue
            clause, args = _section_clause(value) if name == "section" else (f"{name} = ? COLLATE NOCASE", [value])
            found = self.con.execute(f"SELECT 1 FROM sentences WHERE {clause} LIMIT 1", args).fetchone()
            if found is None:
                values = [r[0] for r in self.con.execute(
                    f"SELECT DISTINCT {name} FROM sentences WHERE {name} IS NOT NULL ORDER BY {name} LIMIT 21")]
                shown = ", ".join(values[:20]) + (", ..." if len(values) > 20 else "")
                extra = " (or words of a heading)" if name == "section" else ""
                raise SearchIndexError(f"--{name} {value!r}: no indexed sentence has it; the index has "
                                       f"{shown or 'none'}{extra}")

    def search(self, query: Union[str, Sequence[float], numpy.ndarray], k: int = 10, *,
               label: Optional[str] = None, section: Optional[str] = None,
               paper: Optional[str] = None) -> List[Hit]:
        """The ``k`` indexed sentences most similar to ``query`` (a sentence,
        encoded with the index's pipeline, or a vector), best first, among
        those with the given label, section and paper."""
        if k < 1:
            raise SearchIndexError(f"k must be at least 1, got {k}")
        q = self.encode(query) if isinstance(query, str) else as_matrix(numpy.asarray(query, "float32").reshape(1, -1))
        if q.shape[1] != self.index.d:
            raise SearchIndexError(f"the query vector has {q.shape[1]} dimensions, the index {self.index.d}")
        q = l2_normalize(q)
        allowed = self.allowed_ids(label=label, section=section, paper=paper)
        if allowed is not None and not len(allowed):
            return []
        ids, scores = search_index(self.index, q, k, allowed)
        hits = []
        for id_, score in zip(ids, scores):
            if id_ >= 0:
                hit = fetch_hit(self.con, self.path / META_FILE, id_, score)
                if hit is None:
                    raise SearchIndexError(f"{INVALID}: {self.path / META_FILE} has no sentence {id_}")
                hits.append(hit)
        return hits

    def close(self) -> None:
        self.con.close()
