"""``rhetoric_section_encoder``: COSAEMB section-aware chunk embeddings.

Each section of the doc (a run of sentences with the same
``sent._.rhetoric_section``; run ``rhetoric_section_tagger`` first, raw
headings are categorised with its ``tag_headings``) is cut into chunks of
whole sentences up to ``max_length`` word pieces, the previous chunk's last
sentence repeated, with the section's special token and (first chunk) the
title in front (``spacy_rhetoric.pretrain.cosaemb``). Every chunk is encoded
by the model (the mean of its last hidden states) and stored at doc level, so
it survives ``DocBin(store_user_data=True)``::

    doc._.rhetoric_chunks == [{"section": "introduction", "start_char": 0, "end_char": 812,
                               "sentences": [0, 6], "vector": [...float32 values...]}, ...]

(``sentences``: [start, end) indices into the doc's non-empty sentences).
``chunk_vectors(doc)`` gives them as one float32 array. Sentences without a
section count as "other". The model is a Hugging Face directory (a
``spacy-rhetoric train-cosaemb`` output, or any encoder: the section tokens
are then added untrained); it is saved with the pipeline as safetensors
(``save_pretrained``), never pickled.
"""
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Union

import numpy
import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.util import SimpleFrozenList

from ..errors import RhetoricError
from ..extensions import CHUNKS, SECTION, TITLE, get_doc_value, get_span_value, install_extensions, set_doc_value
from ..util import torch_device

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@Language.factory(
    "rhetoric_section_encoder",
    assigns=["doc._.rhetoric_chunks"],
    default_config={"model_name": DEFAULT_MODEL, "max_length": 256, "batch_size": 8},
)
def make_section_encoder(nlp: Language, name: str, model_name: str, max_length: int, batch_size: int
                         ) -> "SectionEncoder":
    """Create a rhetoric_section_encoder.

    model_name (str): Hugging Face model name or directory (e.g. the
        ``model`` directory written by ``spacy-rhetoric train-cosaemb``).
    max_length (int): word pieces per chunk (at most the encoder's length).
    batch_size (int): chunks per forward pass.
    """
    return SectionEncoder(nlp.vocab, name, model_name=model_name, max_length=max_length, batch_size=batch_size)


def chunk_vectors(doc: Doc) -> numpy.ndarray:
    """The doc's chunk vectors as one [n_chunks, width] float32 array."""
    chunks = get_doc_value(doc, CHUNKS) or []
    if not chunks:
        return numpy.zeros((0, 0), dtype="float32")
    return numpy.asarray([c["vector"] for c in chunks], dtype="float32")


class SectionEncoder(Pipe):
    def __init__(self, vocab, name: str = "rhetoric_section_encoder", *, model_name: str = DEFAULT_MODEL,
                 max_length: int = 256, batch_size: int = 8) -> None:
        install_extensions()
        if max_length < 16:
            raise RhetoricError(f"rhetoric_section_encoder: max_length must be >= 16, got {max_length}")
        self.vocab = vocab
        self.name = name
        self.cfg: Dict[str, Any] = {"model_name": model_name, "max_length": int(max_length),
                                    "batch_size": int(batch_size)}
        self._tokenizer = None
        self._model = None

    # ------------------------------------------------------------ model
    def _load(self, path: Optional[str] = None) -> None:
        from ..ml.section_chunks import load_cosaemb_encoder

        self._tokenizer, self._model = load_cosaemb_encoder(path or self.cfg["model_name"])
        self._model.to(torch_device())  # where spaCy's ops are (spacy.require_gpu / --gpu-id), else the CPU
        self._model.eval()

    @property
    def model(self):
        if self._model is None:
            self._load()
        return self._model

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            self._load()
        return self._tokenizer

    def initialize(self, get_examples=None, *, nlp=None) -> None:
        self._load()

    # ------------------------------------------------------------ inference
    def __call__(self, doc: Doc) -> Doc:
        return list(self.pipe([doc]))[0]

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterable[Doc]:
        for docs in util.minibatch(stream, size=batch_size):
            self._annotate(docs)
            yield from docs

    def _annotate(self, docs: List[Doc]) -> None:
        import torch

        from ..ml.section_chunks import categorise_sections, default_section_tagger, encode_inputs, paper_chunks

        tokenizer = self.tokenizer
        per_doc = []
        for doc in docs:
            if not doc.has_annotation("SENT_START"):
                raise RhetoricError(
                    "rhetoric_section_encoder needs sentence boundaries: add a sentencizer or parser before it"
                )
            sents = [s for s in doc.sents if s.text.strip()]
            raw = [get_span_value(s, SECTION) for s in sents]
            categories = categorise_sections(raw, default_section_tagger()) if sents else []
            ids = tokenizer([s.text for s in sents], add_special_tokens=False)["input_ids"] if sents else []
            title = get_doc_value(doc, TITLE)
            title_ids = tokenizer(title, add_special_tokens=False)["input_ids"] if title else None
            pc = paper_chunks("", ids, categories, title_ids, tokenizer, self.cfg["max_length"])
            chunks = ([pc.abstract] if pc.abstract is not None else []) + pc.chunks()
            chunks.sort(key=lambda c: c.sentences)
            per_doc.append((doc, sents, chunks))
        flat = [c for _, _, chunks in per_doc for c in chunks]
        vectors = []
        with torch.no_grad():
            for i in range(0, len(flat), self.cfg["batch_size"]):
                batch = [c.input_ids for c in flat[i: i + self.cfg["batch_size"]]]
                vectors.extend(encode_inputs(self.model, batch, tokenizer.pad_token_id).cpu().numpy())
        k = 0
        for doc, sents, chunks in per_doc:
            out = []
            for chunk in chunks:
                first, last = chunk.sentences
                out.append({
                    "section": chunk.section,
                    "start_char": int(sents[first].start_char),
                    "end_char": int(sents[last - 1].end_char),
                    "sentences": [int(first), int(last)],
                    "vector": [float(x) for x in vectors[k]],
                })
                k += 1
            set_doc_value(doc, CHUNKS, out)

    # ------------------------------------------------------------ serialisation
    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        path = util.ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path / "cfg", self.cfg)
        if "model" not in exclude:
            self.model.save_pretrained(path / "model", safe_serialization=True)
            self.tokenizer.save_pretrained(path / "model")

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = SimpleFrozenList()
                  ) -> "SectionEncoder":
        path = util.ensure_path(path)
        self.cfg.update(srsly.read_json(path / "cfg"))
        if "model" not in exclude and (path / "model").exists():
            self._load(str(path / "model"))
        return self

    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            self.to_disk(tmp, exclude=exclude)
            files = {str(p.relative_to(tmp)): p.read_bytes() for p in Path(tmp).rglob("*") if p.is_file()}
        return srsly.msgpack_dumps(files)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()) -> "SectionEncoder":
        from ..io import extract_files

        files = srsly.msgpack_loads(bytes_data)
        with tempfile.TemporaryDirectory() as tmp:
            extract_files(files, tmp, what=f"[{self.name}] from_bytes")  # never outside tmp
            self.from_disk(tmp, exclude=exclude)
        return self
