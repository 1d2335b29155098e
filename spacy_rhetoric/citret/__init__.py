"""CitRet (Pandey, Gupta & Pudi, COLING 2022): cited text span retrieval.

One concern per module:

- ``text``: the paper's pre-processing (lowercase, stop words and special
  characters removed) and the shared n-grams of a pair;
- ``pairs``: the fine-tuning pairs built per citance (1.0 / 0.3 / 0.0);
- ``encoder``: ``CitRetEncoder``, a sentence-transformers model with mean
  pooling (``spacy_rhetoric.ml.st_models``), its fine-tuning with
  sentence-transformers' ``CosineSimilarityLoss`` and resumable checkpoints;
- ``denoise``: piecewise common component removal (the paper's Eq. in §3.1.3);
- ``wmd``: Word2Vec training on reference papers, word2vec-format vector
  files (no pickle) and Word Mover's Distance;
- ``scoring``: contextual + non-contextual score of every candidate sentence;
- ``evaluation``: CL-SciSumm task 1a precision / recall / F1 by sentence ids,
  union and per-annotator protocols;
- ``corpus``: topic selection, training pairs and evaluation over topics.
"""
