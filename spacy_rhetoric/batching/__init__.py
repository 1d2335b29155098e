"""What ``spacy train`` needs beside the components and their models (as
``spacy.training``): ``batchers`` (PK batches, ``spacy_rhetoric.pk_batcher.v1``)."""
