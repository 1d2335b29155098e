"""Small helpers shared by test modules (import as ``from helpers import ...``;
pytest puts ``tests/`` on ``sys.path``)."""
import re
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Dict, Set

import spacy
from spacy.training import Example
from spacy.util import registry
from thinc.api import Config

from spacy_rhetoric.extensions import HEADING, set_span_values
from spacy_rhetoric.pipeline.fitting import fit_pipeline_members
from spacy_rhetoric.readers.common import doc_from_sentences

# The ablation configs the benchmarks train (not shipped: configs/ holds those).
BENCHMARK_CONFIGS = Path(__file__).resolve().parent.parent / "benchmarks" / "common" / "configs"


def benchmark_config(name: str) -> Path:
    """The path of the benchmark config ``name`` (with or without ``.cfg``)."""
    path = BENCHMARK_CONFIGS / (name if name.endswith(".cfg") else f"{name}.cfg")
    assert path.is_file(), f"no benchmark config {path}"
    return path


# A tok2vec small enough for overfitting tests in a second or two.
SMALL_TOK2VEC = {
    "@architectures": "spacy.HashEmbedCNN.v2",
    "pretrained_vectors": None,
    "width": 32,
    "depth": 1,
    "embed_size": 500,
    "window_size": 1,
    "maxout_pieces": 3,
    "subword_features": True,
}


def cnn_encoder(width: int, depth: int = 1, window_size: int = 1, maxout_pieces: int = 3,
                dropout: float = 0.0) -> Dict[str, Any]:
    """The config block of a context CNN (``spacy_rhetoric.ContextCNN.v1``) of ``width``."""
    return {"@architectures": "spacy_rhetoric.ContextCNN.v1", "width": width, "depth": depth,
            "window_size": window_size, "maxout_pieces": maxout_pieces, "dropout": dropout}


def lstm_encoder(width: int, depth: int = 1, dropout: float = 0.0) -> Dict[str, Any]:
    """The config block of a context BiLSTM (``spacy_rhetoric.ContextBiLSTM.v1``) of ``width``."""
    return {"@architectures": "spacy_rhetoric.ContextBiLSTM.v1", "width": width, "depth": depth, "dropout": dropout}


def resolve_config(text: str) -> Dict[str, Any]:
    """The sections of a config string with every registered function resolved."""
    return registry.resolve(Config().from_str(text))


def entry_point_names(group: str) -> Set[str]:
    """Names of the installed entry points of ``group`` (e.g. ``spacy_misc``)."""
    return {ep.name for ep in entry_points(group=group)}


def kill_then_rerun(cmd, shards, *, min_shards: int, timeout: float = 300):
    """Start the CLI ``cmd``, SIGKILL it once ``shards`` holds ``min_shards``
    shard files (or it ended), then run it again to the end. Returns
    ``(killed, shards before the rerun, rerun CompletedProcess)``."""
    import os
    import signal
    import subprocess
    import time

    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if shards.exists() and len(list(shards.glob("*.jsonl"))) >= min_shards:
            break
        time.sleep(0.05)
    killed = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_before = len(list(shards.glob("*.jsonl")))
    return killed, n_before, subprocess.run(cmd, env=env, capture_output=True, text=True)


def make_reference(nlp, sentences, labels):
    """A reference Doc whose sentences are exactly ``sentences`` (tokenized by
    ``nlp``), with the gold ``labels`` in the doc-level store."""
    from spacy.tokens import Doc

    from spacy_rhetoric.extensions import set_sent_labels

    words, spaces, starts = [], [], []
    for sent in sentences:
        toks = nlp.make_doc(sent)
        for i, tok in enumerate(toks):
            words.append(tok.text)
            spaces.append(bool(tok.whitespace_) or i == len(toks) - 1)
            starts.append(i == 0)
    spaces[-1] = False
    doc = Doc(nlp.vocab, words=words, spaces=spaces, sent_starts=starts)
    set_sent_labels(doc, labels)
    return doc


def cli_text(result) -> str:
    """A CliRunner result's output without ANSI colours and with whitespace
    folded: wasabi wraps long messages at the terminal width, so where a line
    breaks depends on the length of the (temporary) paths in it."""
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", result.output).split())


def save_tiny_bert(path, *, section_tokens: bool = False, layers: int = 1):
    """A tiny random BERT (hidden size 16, ``layers`` layers, seed 0) with the MiniLM
    tokenizer saved to ``path`` (local files only); ``section_tokens``: the
    tokenizer and the embeddings also have COSAEMB's section tokens."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from spacy_rhetoric.util import resolve_hf_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_hf_model("sentence-transformers/all-MiniLM-L6-v2"))
    if section_tokens:
        from spacy_rhetoric.pretrain.cosaemb import add_section_tokens

        add_section_tokens(tokenizer)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


TINY_SENTENCES = ["Parsing is important.", "We aim to parse.", "We propose a method.", "It works."]
TINY_LABELS = ["background", "objective", "method", "result"]


def save_tiny_pipeline(path, pipes=("rhetoric_function_classifier", "rhetoric_sentence_encoder")):
    """blank + sentencizer + ``pipes``, initialized (untrained) on four labelled
    sentences, saved to ``path``; returns ``path``."""
    import spacy
    from spacy.training import Example

    from spacy_rhetoric.readers.common import doc_from_sentences

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    for name in pipes:
        nlp.add_pipe(name)
    ref = doc_from_sentences(nlp, TINY_SENTENCES, labels=TINY_LABELS)
    nlp.initialize(lambda: [Example(nlp.make_doc(ref.text), ref)])
    nlp.to_disk(path)
    return path


def user_data_items(doc):
    """``doc.user_data`` as a sorted list of ``(key, value)``, numpy arrays
    as lists, for equality checks of whole Docs' extension values."""
    def plain(value):
        return value.tolist() if hasattr(value, "tolist") else value

    return sorted(((k, plain(v)) for k, v in doc.user_data.items()), key=repr)


# A MuLMS-AZ record (readers/mulms.py's JSONL): headings, metadata, a caption,
# a page range, a two-zone sentence, a conclusion zone and acknowledgements.
def mulms_sentence(text, heading=None, structure=(), coarse=()):
    return {"text": text, "heading": heading, "structure": list(structure), "az": [], "coarse": list(coarse)}


MULMS_RECORD = {
    "doc_id": "steel_01", "title": "Hard steel", "split": "train", "fold": "train2",
    "sentences": [
        mulms_sentence("Journal of Steel 3 (2020) 1-9.", structure=["Metadata"]),
        mulms_sentence("Hard steel", "Hard steel", ["Heading"]),
        mulms_sentence("A B S T R A C T", "A B S T R A C T", ["Heading"]),
        mulms_sentence("Steel is hard to make.", "A B S T R A C T", coarse=["background"]),
        mulms_sentence("We show how to make it harder.", "A B S T R A C T", coarse=["objective", "method"]),
        mulms_sentence("1. Introduction", "1. Introduction", ["Heading"]),
        mulms_sentence("Hardness matters in gears.", "1. Introduction", coarse=["background"]),
        mulms_sentence("Fig. 1. A gear under load.", "1. Introduction", ["Caption"], coarse=["result"]),
        mulms_sentence("10-13", "1. Introduction"),
        mulms_sentence("Thus hardness is what gears need.", "1. Introduction", coarse=["conclusion"]),
        mulms_sentence("Thanks", "Thanks", ["Acknowledgment", "Heading"]),
        mulms_sentence("We thank the funder.", "Thanks", ["Acknowledgment"]),
    ],
}


# A tiny full paper for the members of the full-paper mixture (ml/members.py,
# ml/finetuned.py): (text, section, heading, label) per sentence.
PAPER_LABELS = ["background", "method", "result"]
PAPER = [("Parsing is an old task.", "introduction", "1 Introduction", "background"),
         ("Many parsers exist.", "introduction", "1 Introduction", "background"),
         ("We train a graph parser.", "method", "2 Method", "method"),
         ("We tune it on news.", "method", "2 Method", "method"),
         ("Accuracy rises by two points.", "results", "3 Results", "result"),
         ("Recall rises too.", "results", "3 Results", "result")]


def paper_doc(nlp, rows, labels=True):
    """A Doc of ``rows`` (as PAPER) with sections, headings and, if ``labels``, gold labels."""
    from spacy_rhetoric.extensions import HEADING, set_span_values
    from spacy_rhetoric.readers.common import doc_from_sentences

    doc = doc_from_sentences(nlp, [r[0] for r in rows], sections=[r[1] for r in rows],
                             labels=[r[3] for r in rows] if labels else None)
    set_span_values(doc, HEADING, list(doc.sents), [r[2] for r in rows])
    return doc


def as_X(docs):
    """The sentence-level models' input: ``(docs, Ragged (start, end) indices)``."""
    from thinc.api import NumpyOps

    from spacy_rhetoric.ml.pooling import doc_sentences, make_indices

    return docs, make_indices(NumpyOps(), [doc_sentences(d)[1] for d in docs])


# Four tiny abstracts of four sentences each, one label per position, for the
# search index and the HTML views.
FOUR_LABELS = ["background", "objective", "method", "result"]
FOUR_PAPERS = [
    ["Machine translation is an important problem.", "We aim to improve translation of rare words.",
     "We propose a copy mechanism for the decoder.", "Our results show a gain of two BLEU points."],
    ["Graph data is an important resource.", "We aim to classify nodes in large graphs.",
     "We propose a sampling method for the encoder.", "Our results show a gain of five accuracy points."],
    ["Speech recognition is an important task.", "We aim to reduce errors on noisy audio.",
     "We propose an attention mechanism for the acoustic model.", "Our results show a gain of three points."],
    ["Parsing is an important step.", "We aim to parse long sentences quickly.",
     "We propose a chart pruning method for the parser.", "Our results show a gain of four points in speed."],
]
FOUR_SECTIONS = ["Introduction", "Introduction", "Methods", "Results"]


def four_papers_pipeline():
    """blank + sentencizer + classifier + encoder, trained a few steps on FOUR_PAPERS."""
    import spacy
    from spacy.training import Example

    from spacy_rhetoric.readers.common import doc_from_sentences

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_function_classifier")
    nlp.add_pipe("rhetoric_sentence_encoder")
    examples = []
    for sents in FOUR_PAPERS:
        ref = doc_from_sentences(nlp, sents, labels=FOUR_LABELS)
        examples.append(Example(nlp.make_doc(ref.text), ref))
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(10):
        nlp.update(examples, sgd=optimizer, losses={})
    return nlp


# -- a tiny section-aware classifier and its papers (test_sections, test_bench_members) --
CLASSIFIER = "rhetoric_function_classifier"
FULL_PAPER = "spacy_rhetoric.FullPaperSentenceClassifier.v4"
TOK2VEC = dict(SMALL_TOK2VEC, maxout_pieces=2)


def model_config(**kwargs):
    config = {"@architectures": "spacy_rhetoric.SectionAwareSentenceClassifier.v3", "pooling": "mean",
              "width": 32, "dropout": 0.0, "tok2vec": TOK2VEC}
    if kwargs.get("@architectures") == FULL_PAPER:  # the network's arguments go to its block
        network = {k: v for k, v in config.items() if k != "@architectures"}
        network.update(kwargs["network"])
        network.setdefault("encoder", cnn_encoder(network["width"], dropout=network["dropout"]))
        return dict(kwargs, network=network)
    config.update(kwargs)
    config.setdefault("encoder", cnn_encoder(config["width"], dropout=config["dropout"]))
    return config


def sectioned_doc(nlp, sentences, sections, headings, labels=None):
    doc = doc_from_sentences(nlp, sentences, labels=labels, sections=sections)
    set_span_values(doc, HEADING, list(doc.sents), headings)
    return doc


# the same sentence, labelled by its section
SAME = "These numbers are given in the table."
TRAIN = [
    ([SAME, "We build a parser."], ["results", "method"], ["4 Results", "3 Method"], ["result", "method"]),
    ([SAME, "Parsing is old."], ["introduction", "introduction"], ["1 Introduction"] * 2,
     ["background", "background"]),
    (["We build a parser.", SAME], ["method", "results"], ["3 Method", "4 Results"], ["method", "result"]),
    (["Parsing is old.", SAME], ["introduction", "introduction"], ["1 Introduction"] * 2,
     ["background", "background"]),
    (["Thanks to all.", "We build a parser."], ["other", "method"], ["Acknowledgments", "3 Method"],
     ["other", "method"]),
]


def train_nlp(**model_kwargs):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(CLASSIFIER, config={"model": model_config(**model_kwargs)})
    examples = []
    for sents, sections, headings, labels in TRAIN:
        ref = sectioned_doc(nlp, sents, sections, headings, labels)
        pred = sectioned_doc(nlp, sents, sections, headings)
        examples.append(Example(pred, ref))
    optimizer = nlp.initialize(lambda: examples)
    fit_pipeline_members(nlp, examples)  # the mixture's members, if any (pipeline/fitting.py)
    for _ in range(60):
        nlp.update(examples, sgd=optimizer, drop=0.0)
    return nlp


# what a member learns from: registered blocks (ml/experts.py)
PAPERS_BLOCK = {"@misc": "spacy_rhetoric.papers.v1"}
OTHER_DOCS_BLOCK = {"@misc": "spacy_rhetoric.other_docs.v1"}
# the full-paper mixture with TF-IDF members only (every TRAIN doc is a paper: the abstracts' is not fitted)
FULL = {"@architectures": FULL_PAPER,
        "network": {"@architectures": "spacy_rhetoric.SectionAwareNetwork.v1", "section_scale": 1.0,
                    "acknowledgements": False, "ngram_size": 2, "ngram_length": 4096},
        "members": {"tfidf": {"@architectures": "spacy_rhetoric.TfidfMember.v1", "min_df": 1,
                              "learn_from": PAPERS_BLOCK},
                    "abstracts": {"@architectures": "spacy_rhetoric.TfidfMember.v1", "min_df": 1,
                                  "learn_from": OTHER_DOCS_BLOCK, "use_sections": False}},
        "weights": {"paper_body": {"network": 0.5, "tfidf": 0.5},
                    "paper_abstract": {"network": 0.4, "tfidf": 0.3, "abstracts": 0.3},
                    "other_docs": {"network": 0.5, "abstracts": 0.5}}}


# -- a tiny pipeline of the demo's shape (conftest.py's demo_like_pipeline) --
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
DEMO_SENTENCES = {
    "background": ["Parsing is a core task in language processing.",
                   "Many systems rely on syntactic trees for downstream tasks.",
                   "Treebanks are expensive to annotate for new languages."],
    "method": ["We train the parser on projected trees.", "Our model uses a shared bilingual lexicon.",
               "We filter the projected trees by confidence."],
    "result": ["Our approach improves attachment scores by three points.",
               "The results show large gains on free word order languages.",
               "Accuracy increases with the size of the lexicon."],
    "other": ["Code is available online.", "This work was funded by a grant."],
}
# What a test of a demo-like pipeline runs it on: an abstract-like text and a paper with headings.
DEMO_TEXTS = ["Parsing is a core task. We train the parser on projected trees. Accuracy increases with the lexicon.",
              "1 Introduction\n\nTreebanks are expensive to annotate for new languages.\n\n3 Method\n\n"
              "We filter the projected trees by confidence. Our model uses a shared bilingual lexicon.\n\n"
              "4 Results\n\nThe results show large gains on free word order languages.\n"]


def write_tiny_demo_data(root):
    """Tiny stand-ins for the demo's data directory (``apps/demo.py``
    ``find_data``): CSAbstruct train (16 abstracts) and dev (4), a phrase
    file and one MuLMS-AZ paper (``MULMS_RECORD``); returns ``root``."""
    import json
    import random

    from spacy_rhetoric.apps import demo

    root = Path(root)
    (root / demo.CSABSTRUCT_DIR).mkdir(parents=True)
    for split, n, seed in (("train", 16, 0), ("dev", 4, 1)):
        rng = random.Random(seed)
        with (root / demo.CSABSTRUCT_DIR / f"{split}.jsonl").open("w", encoding="utf8") as f:
            for _ in range(n):
                labels = ["background", "method", "result", "other"]
                f.write(json.dumps({"abstract_id": 0, "sentences": [rng.choice(DEMO_SENTENCES[x]) for x in labels],
                                    "labels": labels, "confs": [1.0] * 4}) + "\n")
    (root / demo.PHRASES_DIR).mkdir()
    (root / demo.PHRASES_DIR / "CL.introduction").write_text(
        "Showing the aim of the paper\tin this paper we propose\t3\n"
        "Description of the results\tthe results show that\t2\n", encoding="utf8")
    (root / demo.MULMS_FILE).parent.mkdir(parents=True)
    (root / demo.MULMS_FILE).write_text(json.dumps(MULMS_RECORD) + "\n", encoding="utf8")
    return root


def build_demo_like_pipeline(root, *, classifier_steps: int = 3):
    """A pipeline of the demo's shape built by the demo's own code
    (``apps/demo.py``: ``train_demo_models`` with the packaged default
    classifier config and ``DEMO_CLASSIFIER_SETTINGS``, then
    ``assemble_demo_pipeline``, which writes its meta.json) on
    ``write_tiny_demo_data``, ``classifier_steps`` steps: en_core_web_sm,
    the phrase labeler, the section tagger and the full-paper classifier
    whose fine-tuned member also gives the sentence vectors. Its base model
    is a tiny random BERT (three layers, ``save_tiny_bert``) that stands in
    for all-MiniLM-L6-v2 while training: the config names all-MiniLM-L6-v2
    as the demo's does. Returns the pipeline's directory (``root/pipeline``)."""
    import pytest

    import spacy_rhetoric.util as util
    from spacy_rhetoric.apps import demo

    root = Path(root)
    data = demo.find_data(write_tiny_demo_data(root / "data"))
    tiny = str(save_tiny_bert(root / "tiny-bert", layers=3))
    resolve = util.resolve_hf_model
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(util, "resolve_hf_model", lambda name=MINILM: tiny if name == MINILM else resolve(name))
        classifier, _ = demo.train_demo_models(data, root / "models", classifier_steps=classifier_steps,
                                               encoder_steps=0)
        demo.assemble_demo_pipeline(data, classifier, None, root / "pipeline")
    return root / "pipeline"
