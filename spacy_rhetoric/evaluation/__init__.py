"""Scores and evaluation protocols: ``scorers`` (the one definition of the
classifier scores), ``neighbours`` (exact k-NN), ``metrics`` (retrieval,
downstream, clustering, t-SNE; gold docs through a pipeline), ``models``
(one model spec on gold docs: ``spacy-rhetoric evaluate``), ``fullpaper``
(the scores on full papers with expert labels), and what the benchmarks run:
``pipelines`` (a pipeline's pass over gold papers, each mixture member's
probabilities), ``cv`` (document-disjoint cross-validation), ``encoders`` and
``st_baseline`` (the sentence encoders compared per fold), ``open_set``,
``report`` (a run's report file) and ``results_table`` (RESULTS.md from the
result files)."""
