"""``rhetoric_citance_linker``: cited text span retrieval (CitRet, Pandey et
al. 2022) as a spaCy component.

Given a reference paper (a Doc whose sentences are the candidates) and a
citing sentence, the linker returns the top-k reference sentences ranked by
contextual + non-contextual similarity (see ``spacy_rhetoric.citret``).

Usage::

    nlp = spacy.blank("en"); nlp.add_pipe("sentencizer")
    linker = nlp.add_pipe("rhetoric_citance_linker", config={"vectors_path": "w2v.bin"})
    nlp.initialize()
    ref = doc_from_sentences(nlp, sentences, sids=sids)   # the reference paper
    linker.link("Their tagger uses ...", ref, k=3)        # -> [{"sid", "start_char", ...}]
    linker.set_reference(ref)                              # for nlp(citing_text)
    doc = nlp(citing_text); doc._.citance_links

Which reference paper ``nlp(citing_text)`` links to: the one given to
``linker.set_reference(ref_doc)`` (the default), or, when several are
registered with ``linker.add_reference(ref_doc, key)``, the one whose key is
in ``doc.user_data["citance_reference"]`` (a msgpack-safe string, set before
the linker runs, e.g. ``nlp.make_doc`` then ``linker(doc)``). Registered
references are saved with the pipeline. Every sentence of the citing doc is
a citance unless ``citance_pattern`` (a regular expression, e.g. a citation
marker pattern) is set, then only sentences matching it are linked. A doc
without a reference is left unchanged (one warning).

``doc._.citance_links`` (msgpack-safe, survives DocBin and to_disk) is a list,
one entry per linked citance::

    {"start_char": int, "end_char": int,            # the citance in this doc
     "reference": str | None,                       # key of the reference paper
     "links": [{"sid": str, "start_char": int, "end_char": int, "score": float}, ...]}

with link offsets into the reference doc's text and sids from the reference
doc's sentence ids (``sent._.rhetoric_sid``; the sentence index when absent).

Training: the encoder is fine-tuned with ``linker.finetune(pairs)`` (pairs
from ``spacy_rhetoric.citret.pairs.build_pairs``) or ``spacy-rhetoric
link-train``; word vectors come from ``vectors_path`` (a word2vec binary or
text file, never a pickle) or ``linker.train_vectors(texts)`` /
``spacy-rhetoric link-word2vec``, and are saved with the pipeline as
``vectors.bin`` (word2vec binary); a ``vectors.kv`` gensim pickle written by
older versions is refused when loading. The pipe
has no ``update``: ``nlp.update``/``spacy train`` leave it unchanged.
"""
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy
import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example
from spacy.util import registry
from spacy.vocab import Vocab

from .. import extensions
from ..citret.scoring import CitRetScorer, CitRetSettings, encoder_pairs
from ..citret.text import preprocess
from ..citret.wmd import load_vectors, save_vectors
from ..errors import RhetoricError
from ..io import extract_files

REFERENCE_KEY = "citance_reference"
DEFAULT_REFERENCE = "default"

default_config = {
    "model_name": "sentence-transformers/all-MiniLM-L6-v2",
    "max_length": 128,
    **CitRetSettings().to_dict(),  # use_wce, ngram_n, use_denoising, ..., batch_size
    "vectors_path": None,
    "top_k": 3,
    "citance_pattern": None,
    "scorer": {"@scorers": "spacy_rhetoric.citance_link_scorer.v1"},
}
VECTORS_FILE = "vectors.bin"  # word2vec binary (no pickle)
OLD_VECTORS_FILE = "vectors.kv"  # gensim pickle written by older versions: refused


@Language.factory(
    "rhetoric_citance_linker",
    assigns=["doc._.citance_links"],
    default_config=default_config,
    default_score_weights={"citance_link_f": 1.0, "citance_link_p": 0.0, "citance_link_r": 0.0},
)
def make_citance_linker(
    nlp: Language,
    name: str,
    model_name: str,
    max_length: int,
    use_wce: bool,
    ngram_n: int,
    use_denoising: bool,
    n_components: int,
    use_wmd: bool,
    wmd_weight: float,
    preprocess_for_encoder: bool,
    batch_size: int,
    vectors_path: Optional[str],
    top_k: int,
    citance_pattern: Optional[str],
    scorer: Optional[Callable],
) -> "CitanceLinker":
    """Link citing sentences to the reference-paper sentences they cite (CitRet)."""
    given = locals()
    settings = CitRetSettings(**{f: given[f] for f in CitRetSettings.__dataclass_fields__})
    return CitanceLinker(nlp.vocab, name=name, model_name=model_name, max_length=max_length, settings=settings,
                         vectors_path=vectors_path, top_k=top_k, citance_pattern=citance_pattern, scorer=scorer)


def _link_sids(entry: Dict[str, Any]) -> List[str]:
    return [str(link["sid"]) for link in entry.get("links", [])]


def score_citance_links(examples: Iterable[Example], **kwargs) -> Dict[str, Optional[float]]:
    """Task 1a precision / recall / F1 by sentence-id overlap (micro average).

    Gold: ``doc._.citance_links`` of each example's reference doc (the sids in
    ``links``). A predicted citance is matched to the gold one with the same
    character offsets; gold citances without a prediction count as misses.
    """
    from ..citret.evaluation import Task1aScore

    total = Task1aScore()
    for eg in examples:
        gold = extensions.get_doc_value(eg.reference, extensions.CITANCE_LINKS) or []
        pred = extensions.get_doc_value(eg.predicted, extensions.CITANCE_LINKS) or []
        by_offsets = {(p["start_char"], p["end_char"]): p for p in pred}
        for g in gold:
            p = by_offsets.get((g["start_char"], g["end_char"]), {})
            total.add(_link_sids(p), _link_sids(g))
    if total.citances == 0:
        return {"citance_link_p": None, "citance_link_r": None, "citance_link_f": None}
    return {"citance_link_p": total.precision, "citance_link_r": total.recall, "citance_link_f": total.f1}


@registry.scorers("spacy_rhetoric.citance_link_scorer.v1")
def make_citance_link_scorer() -> Callable:
    return score_citance_links


class CitanceLinker(Pipe):
    """CitRet cited-text-span retrieval component (see the module docstring)."""

    max_cached_references = 8  # prepared reference papers (sentence embeddings) kept in memory

    def __init__(
        self,
        vocab: Vocab,
        name: str = "rhetoric_citance_linker",
        *,
        model_name: str = default_config["model_name"],
        max_length: int = 128,
        settings: Optional[CitRetSettings] = None,
        vectors_path: Optional[str] = None,
        top_k: int = 3,
        citance_pattern: Optional[str] = None,
        scorer: Optional[Callable] = score_citance_links,
    ) -> None:
        self.vocab = vocab
        self.name = name
        self.settings = settings or CitRetSettings()
        self.cfg: Dict[str, Any] = {
            "model_name": model_name,
            "max_length": int(max_length),
            "vectors_path": vectors_path,
            "top_k": int(top_k),
            "citance_pattern": citance_pattern,
            **self.settings.to_dict(),
        }
        self.scorer = scorer
        self._encoder = None
        self._encoder_path: Optional[str] = None  # set by from_disk
        self._vectors = None
        self._pattern = re.compile(citance_pattern) if citance_pattern else None
        self.references: Dict[str, Doc] = {}
        self._prepared: Dict[Any, Any] = {}
        self._warned_no_reference = False

    # ------------------------------------------------------------------ models
    @property
    def encoder(self):
        if self._encoder is None:
            from ..citret.encoder import CitRetEncoder

            if self._encoder_path is not None:
                self._encoder = CitRetEncoder.load(self._encoder_path, max_length=self.cfg["max_length"])
            else:
                self._encoder = CitRetEncoder(self.cfg["model_name"], max_length=self.cfg["max_length"])
        return self._encoder

    def set_encoder(self, encoder) -> None:
        """Use ``encoder`` (a ``citret.encoder.CitRetEncoder``)."""
        self._encoder = encoder
        self._prepared.clear()

    @property
    def vectors(self):
        """The word vectors for WMD (loaded from ``vectors_path`` on first use)."""
        if self._vectors is None and self.cfg.get("vectors_path"):
            self._vectors = load_vectors(self.cfg["vectors_path"])
        return self._vectors

    def set_vectors(self, vectors, path: Optional[str] = None) -> None:
        """Use gensim KeyedVectors ``vectors`` for WMD."""
        self._vectors = vectors
        if path is not None:
            self.cfg["vectors_path"] = str(path)

    def train_vectors(self, texts: Iterable[str], **kwargs) -> Any:
        """Train Word2Vec on ``texts`` (pre-processed like the citances) and use it."""
        from ..citret.wmd import train_word2vec

        kv = train_word2vec((preprocess(t) for t in texts), **kwargs)
        self.set_vectors(kv)
        return kv

    @property
    def retriever(self) -> CitRetScorer:
        """The CitRet scorer of candidate sentences with the current encoder,
        word vectors and settings (``spacy_rhetoric.citret.scoring``)."""
        needs_vectors = self.settings.use_wmd
        return CitRetScorer(self.encoder, self.vectors if needs_vectors else None, self.settings)

    # -------------------------------------------------------------- references
    def add_reference(self, reference: Union[Doc, Sequence[str]], key: str = DEFAULT_REFERENCE) -> Doc:
        """Register a reference paper under ``key`` (a Doc with sentence
        boundaries, or a list of sentences) and return its Doc."""
        doc = self._as_reference_doc(reference)
        self.references[str(key)] = doc
        for cache_key in [k for k in self._prepared if k[0] == id(doc)]:
            del self._prepared[cache_key]
        return doc

    def set_reference(self, reference: Union[Doc, Sequence[str]]) -> Doc:
        """The reference paper that ``nlp(citing_text)`` links to by default."""
        return self.add_reference(reference, DEFAULT_REFERENCE)

    def _as_reference_doc(self, reference: Union[Doc, Sequence[str]]) -> Doc:
        if isinstance(reference, Doc):
            if not (reference.has_annotation("SENT_START") or len(reference) <= 1):
                raise RhetoricError(
                    "the reference Doc has no sentence boundaries: build it with "
                    "spacy_rhetoric.readers.common.doc_from_sentences or run a sentencizer/parser"
                )
            return reference
        from ..readers.common import doc_from_sentences

        sents = [s for s in reference if isinstance(s, str) and s.strip()]
        return doc_from_sentences(self.vocab, sents, sids=[str(i) for i in range(len(sents))])

    def _prepare(self, reference: Doc):
        # cache per reference Doc and encoder input mode (WCE/denoising/WMD
        # settings only change the per-citance part)
        key = (id(reference), self.settings.preprocess_for_encoder)
        cached = self._prepared.get(key)
        if cached is not None and cached[0] is reference and cached[1] == len(reference):
            return cached[2], cached[3]
        sents = list(reference.sents)
        prepared = self.retriever.prepare([s.text for s in sents])
        self._prepared[key] = (reference, len(reference), sents, prepared)
        while len(self._prepared) > self.max_cached_references:
            del self._prepared[next(iter(self._prepared))]  # oldest first
        return sents, prepared

    # ----------------------------------------------------------------- linking
    def link(
        self, citance: Union[str, Doc, Span], reference_doc: Union[Doc, Sequence[str]], k: Optional[int] = None
    ) -> List[Dict[str, Any]]:
        """Top-``k`` reference sentences for ``citance``, best first:
        ``[{"sid", "start_char", "end_char", "score", "contextual",
        "non_contextual", "text"}]`` (offsets into ``reference_doc.text``)."""
        k = self.cfg["top_k"] if k is None else int(k)
        text = citance if isinstance(citance, str) else citance.text
        reference = self._as_reference_doc(reference_doc)
        sents, prepared = self._prepare(reference)
        if not sents:
            return []
        parts = self.retriever.score(text, prepared)
        order = numpy.argsort(-parts["score"], kind="stable")[: max(k, 0)]
        out = []
        for i in order:
            sent = sents[int(i)]
            sid = extensions.get_span_value(sent, extensions.SID)
            out.append(
                {
                    "sid": str(sid) if sid is not None else str(int(i)),
                    "start_char": int(sent.start_char),
                    "end_char": int(sent.end_char),
                    "score": float(parts["score"][i]),
                    "contextual": float(parts["contextual"][i]),
                    "non_contextual": float(parts["non_contextual"][i]),
                    "text": sent.text,
                }
            )
        return out

    def _reference_for(self, doc: Doc):
        key = doc.user_data.get(REFERENCE_KEY)
        if key is not None:
            if str(key) not in self.references:
                raise KeyError(
                    f"doc.user_data[{REFERENCE_KEY!r}] = {key!r} but no reference paper is registered "
                    f"under that key (registered: {sorted(self.references)}); use linker.add_reference"
                )
            return str(key), self.references[str(key)]
        if DEFAULT_REFERENCE in self.references:
            return DEFAULT_REFERENCE, self.references[DEFAULT_REFERENCE]
        return None, None

    def citances(self, doc: Doc) -> List[Span]:
        """The sentences of ``doc`` that are linked."""
        sents = list(doc.sents) if (doc.has_annotation("SENT_START") or len(doc) <= 1) else [doc[:]]
        if self._pattern is not None:
            sents = [s for s in sents if self._pattern.search(s.text)]
        return [s for s in sents if s.text.strip()]

    def __call__(self, doc: Doc) -> Doc:
        key, reference = self._reference_for(doc)
        if reference is None:
            if not self._warned_no_reference:
                warnings.warn(
                    f"{self.name}: no reference paper set (linker.set_reference(ref_doc)); "
                    "docs are left without citance links"
                )
                self._warned_no_reference = True
            return doc
        entries = []
        for sent in self.citances(doc):
            links = self.link(sent, reference)
            entries.append(
                {
                    "start_char": int(sent.start_char),
                    "end_char": int(sent.end_char),
                    "reference": key,
                    "links": [
                        {k: link[k] for k in ("sid", "start_char", "end_char", "score")} for link in links
                    ],
                }
            )
        extensions.set_doc_value(doc, extensions.CITANCE_LINKS, entries)
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterable[Doc]:
        for doc in stream:
            yield self(doc)

    # ---------------------------------------------------------------- training
    def initialize(
        self,
        get_examples: Optional[Callable[[], Iterable[Example]]] = None,
        *,
        nlp: Optional[Language] = None,
        reference: Optional[Union[Doc, Sequence[str]]] = None,
        vectors_path: Optional[str] = None,
        train_vectors: bool = True,
    ) -> None:
        """Load the encoder (so that a missing model fails here), register
        ``reference`` as the default reference paper, and get word vectors
        when WMD is on: from ``vectors_path`` (argument or config), else —
        with ``train_vectors`` — a Word2Vec trained on the texts of the
        examples and the reference (a small stand-in for the corpus-level
        model of ``spacy-rhetoric link-word2vec``)."""
        _ = self.encoder
        if reference is not None:
            self.set_reference(reference)
        if vectors_path is not None:
            self.cfg["vectors_path"] = str(vectors_path)
            self._vectors = None
        if self.settings.use_wmd and self.vectors is None and train_vectors:
            texts = [s.text for doc in self.references.values() for s in doc.sents]
            if get_examples is not None:
                for eg in get_examples():
                    texts.extend(s.text for s in self.citances(eg.reference))
            if any(len(preprocess(t)) > 1 for t in texts):
                self.train_vectors(texts, min_count=1)
        self._prepared.clear()

    def finetune(self, pairs: Sequence, **kwargs) -> Dict[str, float]:
        """Fine-tune the encoder on ``(citance, sentence, score)`` pairs with
        the cosine-similarity pair loss (``citret.encoder.finetune`` kwargs).
        Texts are pre-processed exactly as at linking time."""
        from ..citret.encoder import finetune

        prepared = encoder_pairs(pairs, self.settings.preprocess_for_encoder)
        stats = finetune(self.encoder, prepared, **kwargs)
        self._prepared.clear()
        return stats

    # ----------------------------------------------------------- serialization
    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        cfg = dict(self.cfg)
        srsly.write_json(path / "cfg", cfg)
        if "encoder" not in exclude:
            self.encoder.save(path / "encoder")
        if "vectors" not in exclude and self.vectors is not None:
            save_vectors(self.vectors, path / VECTORS_FILE)
        if "references" not in exclude:
            keys = sorted(self.references)
            bin_ = DocBin(store_user_data=True, docs=[self.references[k] for k in keys])
            bin_.to_disk(path / "references.spacy")
            srsly.write_json(path / "references.json", keys)

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """The ``to_disk`` directory (cfg, encoder weights, word vectors,
        references) as one msgpack dict of relative path -> file bytes."""
        from spacy.util import make_tempdir

        with make_tempdir() as tmp:
            self.to_disk(tmp, exclude=exclude)
            files = {
                f.relative_to(tmp).as_posix(): f.read_bytes()
                for f in sorted(tmp.rglob("*")) if f.is_file()
            }
        return srsly.msgpack_dumps({"files": files})

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "CitanceLinker":
        from spacy.util import make_tempdir

        msg = srsly.msgpack_loads(bytes_data)
        files = msg.get("files") if isinstance(msg, dict) else None
        if not isinstance(files, dict):
            raise RhetoricError(f"[{self.name}] from_bytes: not the output of CitanceLinker.to_bytes")
        with make_tempdir() as tmp:
            extract_files(files, tmp, what=f"[{self.name}] from_bytes")
            vectors_path = None
            if (tmp / "cfg").exists():
                vectors_path = srsly.read_json(tmp / "cfg").get("vectors_path")
            self.from_disk(tmp, exclude=exclude)
            # the temporary directory goes away: load what from_disk loads lazily now
            if self._encoder_path is not None and Path(self._encoder_path).is_relative_to(tmp):
                _ = self.encoder
                self._encoder_path = None
            if self.cfg.get("vectors_path") and Path(self.cfg["vectors_path"]).is_relative_to(tmp):
                self.cfg["vectors_path"] = vectors_path
        return self

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "CitanceLinker":
        path = Path(path)
        if (path / "cfg").exists():
            cfg = srsly.read_json(path / "cfg")
            self.cfg.update(cfg)
            fields = CitRetSettings.__dataclass_fields__
            self.settings = CitRetSettings(**{k: cfg[k] for k in fields if k in cfg})
            self._pattern = re.compile(self.cfg["citance_pattern"]) if self.cfg.get("citance_pattern") else None
        if "encoder" not in exclude and (path / "encoder").exists():
            self._encoder_path = str(path / "encoder")
            self._encoder = None
        if "vectors" not in exclude and (path / VECTORS_FILE).exists():
            self._vectors = load_vectors(path / VECTORS_FILE)
            self.cfg["vectors_path"] = str(path / VECTORS_FILE)
        elif "vectors" not in exclude and (path / OLD_VECTORS_FILE).exists():
            raise RhetoricError(
                f"[{self.name}] {path / OLD_VECTORS_FILE}: word vectors saved as a gensim pickle by an older "
                "version; pickles can run code when loaded and are refused. Re-create the pipeline's vectors "
                "(spacy-rhetoric link-word2vec, then link --vectors FILE) and save it again"
            )
        if "references" not in exclude and (path / "references.spacy").exists():
            keys = srsly.read_json(path / "references.json")
            docs = list(extensions.docbin_docs(DocBin().from_disk(path / "references.spacy"), self.vocab))
            self.references = dict(zip(keys, docs))
        self._prepared.clear()
        return self
