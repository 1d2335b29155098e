"""Search a corpus for sentences that make the same rhetorical move.

``build_index`` encodes every sentence of a corpus with a trained pipeline
(``sent._.rhetoric_vector`` from ``rhetoric_sentence_encoder``) into a faiss
index plus a metadata store; :class:`RhetoricIndex` loads it and answers
queries (a sentence, encoded with the same pipeline, or a vector), filtered by
label, section or paper.

An index is a directory::

    INDEX/index.faiss       faiss.write_index (inner product of unit vectors = cosine)
    INDEX/sentences.sqlite  one row per vector (id = faiss id): paper, section,
                            heading, sentence index, sid, text, label (predicted
                            by the pipeline's classifier, else the corpus' gold
                            label), fine label, gold label, scores (JSON)
    INDEX/index.json        pipeline path and meta, dimension, size, faiss
                            factory string and search parameters, inputs

No pickle anywhere. Corpora: ``.spacy`` DocBins, the JSONL written by
``spacy-rhetoric label`` (one sentence per line, consecutive lines of one
``paper_id`` are one paper) and paper files in any format
``readers.papers.detect_format`` knows (TEI, JATS, S2ORC, PDF, CL-SciSumm XML,
text), given as files or folders (searched recursively, hidden files left
out). A file that cannot be read is skipped and counted.

The build is resumable and atomic. Work happens in ``INDEX.tmp-dir``: papers
are cut into parts of about ``part_sentences`` sentences (the cut depends only
on the inputs, whose sha1s are recorded in ``build.json``, so a rerun cuts them
the same way); a part's vectors go to ``vectors/part-N.npy`` (temporary file +
rename), then its rows and its done-marker are committed to the SQLite store
in one transaction. A rerun skips the parts marked done, so an interrupted
build resumes without duplicates or gaps. At the end the faiss index and
``index.json`` are written, the part vectors removed, and ``INDEX.tmp-dir``
renamed to ``INDEX`` (a previous index there is replaced only then).

Index type (``index_type="auto"``): exact ``IndexFlatIP`` up to
``EXACT_MAX_VECTORS`` vectors, IVF-PQ above (``"ivfpq"``: sqrt(n) inverted
lists, 4-bit fast-scan PQ codes, the best ``k_factor_rf * k`` candidates
re-ranked exactly; it builds in minutes on one thread where HNSW takes far
longer); ``"hnsw"`` (``HNSW_FACTORY``), ``"flat"`` or any faiss
``index_factory`` string override it. Search parameters (``nprobe``,
``efSearch``) are stored in ``index.json``. Recall@10 and ms/query at 100k
and 1M vectors: ``benchmarks/search/bench_search.py``.

Filtered search: the ids allowed by the filters come from SQLite; up to
``SUBSET_EXACT_MAX`` of them are searched exactly (their vectors
reconstructed from the index), more go to faiss with an ``IDSelectorBatch``.
"""
from .faiss_index import (  # noqa: F401
    EXACT_MAX_VECTORS,
    HNSW_EF_CONSTRUCTION,
    HNSW_FACTORY,
    HNSW_PARAMS,
    INDEX_TYPES,
    IVF_KMEANS_ITERATIONS,
    IVFPQ_PARAMS,
    SUBSET_EXACT_MAX,
    IndexBuildError,
    build_faiss_index,
    check_index_type,
    faiss_search,
    index_factory_for,
    make_index,
    pipeline_dim,
    search_index,
    selector_params,
    set_search_params,
)
from .index import (  # noqa: F401
    BUILD_FILE,
    CONFIG_FILE,
    DEFAULT_PART_SENTENCES,
    FORMAT_VERSION,
    INDEX_FILE,
    META_FILE,
    VECTOR_DIR,
    WORK_SUFFIX,
    Encoder,
    RhetoricIndex,
    build_index,
    check_index_output,
    work_dir,
)
from .sources import (  # noqa: F401
    PathLike,
    SearchIndexError,
    check_pipeline,
    corpus_files,
    doc_paper,
    encode_papers,
    iter_corpus,
    iter_parts,
    load_pipeline,
    not_for_vectors,
    paper_doc,
    sentence_rows,
)
from .store import COLUMNS, FILTERS, Hit  # noqa: F401
