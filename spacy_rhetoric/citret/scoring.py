"""CitRet scores of every candidate (reference-paper) sentence for a citance.

score = contextual + non-contextual (§3, Fig. 1):

- contextual: cosine similarity of the citance and candidate embeddings from
  the (fine-tuned) encoder; with ``use_wce`` the n-grams the pair shares are
  appended to both sentences before encoding (weighted contextual
  embeddings, §3.1.2); with ``use_denoising`` the first m common components
  of the document's embeddings are removed from both (§3.1.3, see
  :mod:`.denoise`);
- non-contextual: ``-WMD`` between the pre-processed sentences (§3.2, see
  :mod:`.wmd`), times ``wmd_weight`` (1.0 = the paper's plain sum).

The pre-processed text (lowercase, no stop words, no special characters)
is what the encoder sees when ``preprocess_for_encoder`` is on, as in the
paper's pipeline where the input pair is pre-processed first; shared
n-grams and WMD always use it.

The "document" whose common components are removed is the citance's
context: the candidate-side embeddings of all reference-paper sentences
(WCEs when ``use_wce``) plus the citance's own plain embedding, i.e. the
l × d matrix A of the paper with l = RP sentences + the citing sentence.
"""
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy

from ..errors import RhetoricError
from .denoise import common_components, remove_common_components
from .text import append_keywords, preprocess, shared_ngrams
from .wmd import wmd_similarities


@dataclass
class CitRetSettings:
    use_wce: bool = True
    ngram_n: int = 2
    use_denoising: bool = True
    n_components: int = 3
    use_wmd: bool = True
    wmd_weight: float = 1.0
    preprocess_for_encoder: bool = True
    batch_size: int = 32

    def to_dict(self) -> Dict:
        return asdict(self)


def encoder_input(text: str, preprocess_for_encoder: bool = True, tokens: Optional[Sequence[str]] = None) -> str:
    """What the encoder sees for ``text``: its pre-processed tokens joined by
    spaces (``preprocess_for_encoder``; the raw text when none are left), or
    the raw text."""
    if not preprocess_for_encoder:
        return text
    tokens = preprocess(text) if tokens is None else tokens
    return " ".join(tokens) if tokens else text


def encoder_pairs(pairs: Sequence[Tuple[str, str, float]], preprocess_for_encoder: bool = True) -> List[Tuple[str, str, float]]:
    """Fine-tuning pairs with both texts as the encoder sees them at linking time."""
    return [(encoder_input(a, preprocess_for_encoder), encoder_input(b, preprocess_for_encoder), float(score))
            for a, b, score in pairs]


def _cosine_rows(a: numpy.ndarray, b: numpy.ndarray) -> numpy.ndarray:
    na = numpy.linalg.norm(a, axis=1)
    nb = numpy.linalg.norm(b, axis=1)
    denom = numpy.maximum(na * nb, 1e-12)
    return (a * b).sum(1) / denom


class PreparedReference:
    """The per-reference-paper work done once: tokens, encoder inputs and
    plain embeddings of every candidate sentence."""

    def __init__(self, texts: Sequence[str], tokens: List[List[str]], inputs: List[str], vectors: numpy.ndarray):
        self.texts = list(texts)
        self.tokens = tokens
        self.inputs = inputs
        self.vectors = vectors


class CitRetScorer:
    """Scores candidate sentences for a citance (no spaCy needed)."""

    def __init__(self, encoder, vectors=None, settings: Optional[CitRetSettings] = None):
        self.encoder = encoder
        self.vectors = vectors
        self.settings = settings or CitRetSettings()

    def encoder_input(self, text: str, tokens: Sequence[str]) -> str:
        return encoder_input(text, self.settings.preprocess_for_encoder, tokens)

    def prepare(self, candidates: Sequence[str]) -> PreparedReference:
        tokens = [preprocess(t) for t in candidates]
        inputs = [self.encoder_input(t, toks) for t, toks in zip(candidates, tokens)]
        vecs = self.encoder.encode(inputs, batch_size=self.settings.batch_size)
        return PreparedReference(candidates, tokens, inputs, vecs)

    def score(self, citance: str, reference: PreparedReference) -> Dict[str, numpy.ndarray]:
        """``{"score", "contextual", "non_contextual"}``, one value per candidate."""
        s = self.settings
        n = len(reference.texts)
        if n == 0:
            empty = numpy.zeros((0,), dtype="float64")
            return {"score": empty, "contextual": empty, "non_contextual": empty}
        q_tokens = preprocess(citance)
        q_input = self.encoder_input(citance, q_tokens)
        q_plain = self.encoder.encode([q_input], batch_size=1)[0].astype("float64")
        C = reference.vectors.astype("float64").copy()
        Q = numpy.repeat(q_plain[None, :], n, axis=0)
        if s.use_wce:
            idx, texts = [], []
            for i, toks in enumerate(reference.tokens):
                kws = shared_ngrams(q_tokens, toks, s.ngram_n)
                if kws:
                    idx.append(i)
                    texts.append(append_keywords(reference.inputs[i], kws))
                    texts.append(append_keywords(q_input, kws))
            if idx:
                enc = self.encoder.encode(texts, batch_size=s.batch_size).astype("float64")
                C[idx] = enc[0::2]
                Q[idx] = enc[1::2]
        if s.use_denoising:
            comps, weights = common_components(numpy.vstack([C, q_plain[None, :]]), s.n_components)
            C = remove_common_components(C, comps, weights)
            Q = remove_common_components(Q, comps, weights)
        contextual = _cosine_rows(Q, C)
        if s.use_wmd:
            if self.vectors is None:
                raise RhetoricError(
                    "use_wmd is on but no word vectors are loaded: give a vectors file "
                    "(component config 'vectors_path', CLI --vectors) or switch WMD off"
                )
            non_contextual = s.wmd_weight * wmd_similarities(self.vectors, q_tokens, reference.tokens)
        else:
            non_contextual = numpy.zeros(n, dtype="float64")
        return {"score": contextual + non_contextual, "contextual": contextual, "non_contextual": non_contextual}

    def rank(self, citance: str, reference: PreparedReference, k: int = 3) -> List[int]:
        scores = self.score(citance, reference)["score"]
        order = numpy.argsort(-scores, kind="stable")
        return [int(i) for i in order[:k]]
