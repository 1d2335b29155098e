"""CitRet (Pandey, Gupta & Pudi, COLING 2022): cited text span retrieval.

One concern per module:

- ``text``: the paper's pre-processing (lowercase, stop words and special
  characters removed) and the shared n-grams of a pair;
- ``pairs``: the fine-tuning pairs built per citance (1.0 / 0.3 / 0.0);
- ``encoder``: a plain ``transformers`` encoder with mean pooling, its
  fine-tuning with the cosine-similarity pair loss and resumable checkpoints;
- ``denoise``: piecewise common component removal (the paper's Eq. in §3.1.3);
- ``wmd``: Word2Vec training on reference papers and Word Mover's Distance;
- ``scoring``: contextual + non-contextual score of every candidate sentence;
- ``evaluation``: CL-SciSumm task 1a precision / recall / F1 by sentence ids.
"""
