"""What ``spacy train`` needs beside the components (as ``spacy.training``):
``batchers`` (PK batches, ``spacy_rhetoric.pk_batcher.v1``) and ``splits``
(document-disjoint train/test splits)."""
