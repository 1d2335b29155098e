"""Applications built on the pipeline: one module per feature, each the
library side of a ``spacy-rhetoric`` sub-command (``cli/``): ``annotate``
(folders of papers -> one record per sentence), ``alignment`` (two papers,
sentence by sentence), ``render`` (HTML views), ``assemble`` (one pipeline
from trained parts) and ``demo``."""
