"""spacy_rhetoric.pk_batcher.v1: every batch has exactly K items of each of
P distinct labels; seeded and reproducible; skip-and-count; works inside
spaCy's training-loop batching (re-called per epoch, and on streams)."""
import math
from collections import Counter
from itertools import islice

import pytest
import spacy
from helpers import entry_point_names, resolve_config
from spacy.training import Example
from spacy.util import registry

from spacy_rhetoric.batching.batchers import AMBIGUOUS, PKBatcher, example_label
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.readers.corpora import sentence_examples

# label -> number of items; "e" has fewer than K=4 items
SIZES = {"a": 10, "b": 7, "c": 5, "d": 12, "e": 2}


def tuple_items(sizes=SIZES, unlabelled=0):
    items = []
    for label, n in sizes.items():
        items.extend((f"{label}{i}", label) for i in range(n))
    items.extend((f"none{i}", None) for i in range(unlabelled))
    return items


def make(p, k, **kwargs):
    kwargs.setdefault("get_label", lambda item: item[1])
    return registry.batchers.get("spacy_rhetoric.pk_batcher.v1")(p=p, k=k, **kwargs)


def assert_pk(batch, p, k, get_label=lambda item: item[1]):
    counts = Counter(get_label(item) for item in batch)
    assert len(batch) == p * k
    assert len(counts) == p, counts
    assert set(counts.values()) == {k}, counts
    # grouped label by label
    labels = [get_label(item) for item in batch]
    assert all(len(set(labels[i * k : (i + 1) * k])) == 1 for i in range(p))


def test_every_batch_has_p_labels_times_k():
    batcher = make(3, 4, seed=0)
    items = tuple_items(unlabelled=3)
    batches = list(batcher(items))
    n_labelled = sum(SIZES.values())
    assert len(batches) == math.ceil(n_labelled / 12)
    for batch in batches:
        assert_pk(batch, 3, 4)
    # the labels are sampled: over the batches more than P labels occur
    assert len({item[1] for batch in batches for item in batch}) > 3
    assert batcher.stats["skipped_unlabelled"] == 3
    assert batcher.stats["items"] == n_labelled + 3
    assert batcher.stats["labels_with_replacement"] == 1  # "e" (2 < k)
    assert batcher.stats["batches"] == len(batches)


def test_small_class_sampled_with_replacement():
    batcher = make(2, 4, seed=3, batches_per_chunk=20)
    batches = list(batcher(tuple_items({"big": 20, "tiny": 2})))
    assert len(batches) == 20
    for batch in batches:
        assert_pk(batch, 2, 4)
        tiny = [item for item in batch if item[1] == "tiny"]
        assert len(tiny) == 4 and set(tiny) <= {("tiny0", "tiny"), ("tiny1", "tiny")}


def test_large_class_uses_every_item_before_repeating():
    batcher = make(2, 4, seed=5, batches_per_chunk=12)
    items = tuple_items({"x": 8, "y": 8})
    drawn = [item for batch in batcher(items) for item in batch if item[1] == "x"]
    assert len(drawn) == 48
    for cycle in range(6):
        assert len(set(drawn[cycle * 8 : (cycle + 1) * 8])) == 8


def test_seed_reproducible_and_epochs_continue():
    items = tuple_items()
    first = list(make(3, 2, seed=7)(items))
    again = list(make(3, 2, seed=7)(items))
    other = list(make(3, 2, seed=8)(items))
    assert first == again
    assert first != other
    batcher = make(3, 2, seed=7)
    epoch1, epoch2 = list(batcher(items)), list(batcher(items))
    assert epoch1 == first and epoch2 != epoch1
    for batch in epoch1 + epoch2:
        assert_pk(batch, 3, 2)


def test_p_zero_means_all_labels():
    batcher = make(0, 2, seed=0)
    for batch in batcher(tuple_items()):
        assert_pk(batch, len(SIZES), 2)


def test_too_few_labels_is_a_clear_error():
    with pytest.raises(ValueError, match="p=6 labels"):
        list(make(6, 2)(tuple_items()))
    with pytest.raises(ValueError, match="no labelled items"):
        list(make(2, 2)([("t", None)]))
    with pytest.raises(ValueError, match="k must be"):
        make(2, 0)


def test_stream_with_buffer():
    def endless():
        i = 0
        while True:
            label = "abcd"[i % 4] if i % 5 else None
            yield (f"t{i}", label)
            i += 1

    batcher = make(2, 3, seed=0, buffer=40)
    batches = list(islice(batcher(endless()), 30))
    assert len(batches) == 30
    for batch in batches:
        assert_pk(batch, 2, 3)
    assert batcher.stats["skipped_unlabelled"] > 0


def test_stream_carries_small_chunks_over_and_counts_leftover():
    # chunks of 4 hold a single label each: carried over until 2 labels are present
    items = [("a0", "a"), ("a1", "a"), ("a2", "a"), ("a3", "a"), ("b0", "b"), ("b1", "b"), ("b2", "b"),
             ("b3", "b"), ("c0", "c"), ("c1", "c")]
    batcher = make(2, 2, seed=0, buffer=4)
    batches = list(batcher(items))
    assert batches and all(set(Counter(i[1] for i in b)) == {"a", "b"} for b in batches)
    assert batcher.stats["leftover"] == 2


# ---------------------------------------------------------------------------
# spaCy Examples
# ---------------------------------------------------------------------------


@pytest.fixture
def nlp():
    return spacy.blank("en")


def make_examples(nlp, per_label):
    sentences, labels = [], []
    for label, n in per_label.items():
        for i in range(n):
            sentences.append(f"This is {label} sentence number {i} .")
            labels.append(label)
    doc = doc_from_sentences(nlp, sentences, labels=labels)
    return list(sentence_examples(nlp, doc))


def test_examples_from_sentence_corpus(nlp):
    examples = make_examples(nlp, {"background": 6, "method": 5, "result": 4, "objective": 3})
    assert example_label(examples[0]) == "background"
    # an Example without a label and one with two differently labelled sentences
    unlabelled = Example(nlp.make_doc("No label here ."), doc_from_sentences(nlp, ["No label here ."]))
    two = doc_from_sentences(nlp, ["First one .", "Second one ."], labels=["method", "result"])
    ambiguous = Example(nlp.make_doc(two.text), two)
    assert example_label(unlabelled) is None and example_label(ambiguous) is AMBIGUOUS
    batcher = registry.batchers.get("spacy_rhetoric.pk_batcher.v1")(p=2, k=3, seed=0)
    batches = list(batcher(examples + [unlabelled, ambiguous]))
    assert len(batches) == math.ceil(18 / 6)
    for batch in batches:
        assert all(isinstance(eg, Example) for eg in batch)
        assert_pk(batch, 2, 3, get_label=example_label)
    assert batcher.stats["skipped_unlabelled"] == 1
    assert batcher.stats["skipped_ambiguous"] == 1


def test_label_field(nlp):
    doc = doc_from_sentences(nlp, ["One .", "Two .", "Three .", "Four ."], sections=["intro", "intro", "res", "res"])
    examples = list(sentence_examples(nlp, doc, label_field="section"))
    batcher = PKBatcher(2, 2, label_field="section", seed=0)
    (batch,) = list(batcher(examples))
    assert_pk(batch, 2, 2, get_label=lambda eg: example_label(eg, "section"))


def test_non_example_items_need_get_label():
    with pytest.raises(TypeError, match="get_label"):
        list(PKBatcher(2, 2)([("text", "label")]))


def test_training_loop_recalls_batcher_per_epoch(nlp):
    from spacy.training.loop import create_train_batches

    examples = make_examples(nlp, {"a": 4, "b": 4, "c": 4})
    batcher = registry.batchers.get("spacy_rhetoric.pk_batcher.v1")(p=2, k=2, seed=0)
    out = list(create_train_batches(nlp, lambda _nlp: iter(examples), batcher, max_epochs=3))
    assert {epoch for epoch, _ in out} == {0, 1, 2}
    assert len(out) == 3 * 3
    for _, batch in out:
        assert_pk(batch, 2, 2, get_label=example_label)


def test_registry_config_and_entry_point():
    batcher = resolve_config(
        """
        [batcher]
        @batchers = "spacy_rhetoric.pk_batcher.v1"
        p = 8
        k = 8
        label_field = "label"
        seed = 3
        """
    )["batcher"]
    assert isinstance(batcher, PKBatcher) and (batcher.p, batcher.k, batcher.seed) == (8, 8, 3)
    assert "spacy_rhetoric.pk_batcher.v1" in entry_point_names("spacy_batchers")


def test_config_arguments_are_checked():
    from thinc.api import ConfigValidationError

    with pytest.raises(ConfigValidationError, match="bufer"):
        resolve_config('[b]\n@batchers = "spacy_rhetoric.pk_batcher.v1"\np = 2\nk = 2\nbufer = 3\n')
