"""PK batches for metric learning: P labels x K examples per batch.

``spacy_rhetoric.pk_batcher.v1`` (``registry.batchers``, entry point
``spacy_batchers``) follows spaCy's batcher convention: the registered
function returns a callable ``items -> Iterator[List[item]]`` that the
training loop calls once per epoch (``spacy.training.loop.create_train_batches``)::

    [training.batcher]
    @batchers = "spacy_rhetoric.pk_batcher.v1"
    p = 8
    k = 8
    label_field = "label"
    seed = 0

Items are normally the Examples of ``spacy_rhetoric.SentenceCorpus.v1``: the
reference Doc of each has ONE labelled sentence, whose ``label_field`` value
(``spacy_rhetoric.extensions.labelled_spans``) is the item's label. Other
items (e.g. ``(text, label)`` tuples in tests) need ``get_label``.

Sampling (Hermans et al. 2017, as in SciToricsBERT App. B):

* the input is read in chunks of ``buffer`` items (0 = all of it), lazily, so
  an endless stream (``max_epochs = -1``) also works when ``buffer > 0``;
* each chunk gives ``ceil(n_labelled / (P*K))`` batches (about one pass over
  the chunk), or ``batches_per_chunk`` if set;
* a batch takes P DISTINCT labels uniformly at random (``p <= 0``: every label
  of the chunk), then K examples of each, grouped label by label;
* each label's examples are drawn without replacement from a shuffled queue
  that is refilled (reshuffled) when it runs out, so every example is used
  before any is repeated; a label with FEWER than K examples in the chunk is
  sampled WITH replacement (``random.choices``), so its batches contain
  duplicates (the metric losses handle identical embeddings: zero distance,
  finite gradients).

Items without a label (no labelled sentence, or a reference with several
labelled sentences of different labels: use SentenceCorpus for multi-sentence
docs) are skipped and counted (``batcher.stats``, and a log warning per call
that skipped something). A chunk with fewer than P labels is carried over to
the next chunk; if the input ends before ANY batch could be made, a
ValueError names the labels found; leftover items at the end of the input
that cannot form a batch are counted in ``stats["leftover"]``.

Randomness comes from one ``random.Random(seed)`` owned by the batcher: two
batchers with the same seed and the same input yield the same batches, and
successive calls (epochs) of one batcher continue the same random stream.
"""
import logging
import math
import random
from itertools import islice
from typing import Any, Callable, Dict, Hashable, Iterable, Iterator, List, Optional

from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from ..errors import RhetoricError
from ..extensions import LABEL, labelled_spans

logger = logging.getLogger(__name__)

__all__ = ["PKBatcher", "pk_batcher", "example_label"]


class _Unlabelled:
    """Marker for items whose reference has several different labels."""


AMBIGUOUS = _Unlabelled()


def example_label(item: Any, label_field: str = LABEL) -> Any:
    """The label of an Example (or Doc): the ``label_field`` value of its
    reference's labelled sentence; None without one; ``AMBIGUOUS`` when
    several labelled sentences carry different labels."""
    if isinstance(item, Example):
        doc = item.reference
    elif isinstance(item, Doc):
        doc = item
    else:
        raise TypeError(
            f"pk_batcher: cannot read a label from a {type(item).__name__}; items must be spaCy "
            "Examples (e.g. from spacy_rhetoric.SentenceCorpus.v1) or give a get_label callable"
        )
    labels = {label for _, _, label in labelled_spans(doc, field=label_field) if label is not None}
    if not labels:
        return None
    if len(labels) > 1:
        return AMBIGUOUS
    return next(iter(labels))


class PKBatcher:
    """Callable ``items -> Iterator[List[item]]`` yielding P x K batches (see
    the module docstring). ``stats`` accumulates over calls: items,
    skipped_unlabelled, skipped_ambiguous, leftover, batches,
    labels_with_replacement (label-chunk pairs sampled with replacement).

    The class itself is registered as ``spacy_rhetoric.pk_batcher.v1``
    (``pk_batcher``), so its arguments are the config's. SciToricsBERT App. B
    uses P = 8, K = 8 for the triplet / multi-similarity / NT-Xent losses and
    P = 64, K = 1 for softmax / ArcFace.

    p: labels per batch (distinct); ``p <= 0`` means every label of the chunk.
    k: examples per label (with replacement for labels with fewer than k).
    label_field: the extensions field holding the gold label.
    seed: seed of the batcher's own random generator.
    buffer: items read per chunk (0 = the whole input; needs a finite input).
    batches_per_chunk: batches per chunk (0 = ceil(labelled items / (p*k))).
    get_label: item -> label (None = unlabelled) for non-Example items.
    """

    def __init__(
        self,
        p: int,
        k: int,
        label_field: str = LABEL,
        seed: int = 0,
        buffer: int = 50000,
        batches_per_chunk: int = 0,
        get_label: Optional[Callable[[Any], Optional[Hashable]]] = None,
    ) -> None:
        if int(k) < 1:
            raise RhetoricError(f"pk_batcher: k must be >= 1, got {k}")
        if int(buffer) < 0 or int(batches_per_chunk) < 0:
            raise RhetoricError(
                f"pk_batcher: buffer and batches_per_chunk must be >= 0, got {buffer}, {batches_per_chunk}"
            )
        self.p = int(p)
        self.k = int(k)
        self.label_field = label_field
        self.seed = seed
        self.buffer = int(buffer)
        self.batches_per_chunk = int(batches_per_chunk)
        self.get_label = get_label
        self.rng = random.Random(seed)
        self.stats: Dict[str, int] = {
            "items": 0,
            "skipped_unlabelled": 0,
            "skipped_ambiguous": 0,
            "leftover": 0,
            "batches": 0,
            "labels_with_replacement": 0,
        }

    # -- labels --------------------------------------------------------------

    def label_of(self, item: Any) -> Any:
        if self.get_label is not None:
            return self.get_label(item)
        return example_label(item, self.label_field)

    # -- batching ------------------------------------------------------------

    def __call__(self, items: Iterable[Any]) -> Iterator[List[Any]]:
        return self._batches(iter(items))

    def _chunks(self, items: Iterator[Any]) -> Iterator[Dict[Hashable, List[Any]]]:
        """Per-label pools of successive chunks of ``buffer`` items (labels in
        first-seen order, items in input order)."""
        skipped = [0, 0]  # this call's unlabelled / ambiguous items
        while True:
            chunk = list(islice(items, self.buffer)) if self.buffer else list(items)
            if not chunk:
                break
            pools: Dict[Hashable, List[Any]] = {}
            for item in chunk:
                label = self.label_of(item)
                if label is None:
                    skipped[0] += 1
                    self.stats["skipped_unlabelled"] += 1
                elif label is AMBIGUOUS:
                    skipped[1] += 1
                    self.stats["skipped_ambiguous"] += 1
                else:
                    pools.setdefault(label, []).append(item)
            self.stats["items"] += len(chunk)
            yield pools
            if not self.buffer or len(chunk) < self.buffer:
                break
        if skipped[0] or skipped[1]:
            logger.warning(
                "pk_batcher: skipped %d items without a '%s' label and %d with several different "
                "labels (one labelled sentence per Example is expected: spacy_rhetoric.SentenceCorpus.v1)",
                skipped[0], self.label_field, skipped[1],
            )

    def _batches(self, items: Iterator[Any]) -> Iterator[List[Any]]:
        made_any = False
        carry: Dict[Hashable, List[Any]] = {}
        for pools in self._chunks(items):
            for label, pool in pools.items():
                carry.setdefault(label, []).extend(pool)
            n_labels = len(carry)
            if n_labels < max(self.p, 2 if self.p <= 0 else 1):
                continue  # not enough labels yet: carry over to the next chunk
            for batch in self._batches_from_pools(carry):
                made_any = True
                yield batch
            carry = {}
        if carry:
            n_left = sum(len(v) for v in carry.values())
            if not made_any:
                found = sorted(map(str, carry))
                raise RhetoricError(
                    f"pk_batcher: cannot make a batch of p={self.p} labels x k={self.k}: the input has "
                    f"{len(carry)} label(s) {found[:20]} in {n_left} labelled items (field "
                    f"'{self.label_field}'; skipped so far: {self.stats['skipped_unlabelled']} unlabelled, "
                    f"{self.stats['skipped_ambiguous']} with several labels). Lower p, or use p = 0 for "
                    "all labels in every batch"
                )
            self.stats["leftover"] += n_left
            logger.warning("pk_batcher: %d items at the end of the input had fewer than p=%d labels", n_left, self.p)
        elif not made_any:
            raise RhetoricError(
                f"pk_batcher: no labelled items in the input (field '{self.label_field}'; "
                f"{self.stats['skipped_unlabelled']} unlabelled and {self.stats['skipped_ambiguous']} "
                "items with several labels skipped)"
            )

    def _batches_from_pools(self, pools: Dict[Hashable, List[Any]]) -> Iterator[List[Any]]:
        rng = self.rng
        labels = list(pools)
        p = len(labels) if self.p <= 0 else self.p
        n_items = sum(len(v) for v in pools.values())
        n_batches = self.batches_per_chunk or max(1, math.ceil(n_items / (p * self.k)))
        queues: Dict[Hashable, List[Any]] = {label: [] for label in labels}
        for label in labels:
            if len(pools[label]) < self.k:
                self.stats["labels_with_replacement"] += 1
        for _ in range(n_batches):
            chosen = rng.sample(labels, p)
            batch: List[Any] = []
            for label in chosen:
                pool = pools[label]
                if len(pool) < self.k:
                    batch.extend(rng.choices(pool, k=self.k))
                    continue
                queue = queues[label]
                taken: List[Any] = []
                while len(taken) < self.k:
                    if not queue:
                        queue.extend(pool)
                        rng.shuffle(queue)
                    taken.append(queue.pop())
                batch.extend(taken)
            self.stats["batches"] += 1
            yield batch


# the registered function is the class (one signature for the config and the code)
pk_batcher = registry.batchers("spacy_rhetoric.pk_batcher.v1", func=PKBatcher)
