"""Scores and evaluation protocols: ``scorers`` (the one definition of the
classifier scores), ``neighbours`` (exact k-NN), ``metrics`` (retrieval,
downstream, clustering, t-SNE; gold docs through a pipeline) and ``models``
(one model spec on gold docs: ``spacy-rhetoric evaluate``)."""
