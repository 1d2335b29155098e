"""spacy_rhetoric: rhetorical structure of scientific papers for spaCy 3.

Importing the package installs the Span/Doc extensions; spaCy finds the
components, architectures, scorers and readers through entry points, so
``spacy.load`` works without importing this package first.
"""
from .about import __version__
from .colors import LABEL_COLORS, displacy_options
from .extensions import (
    get_sent_labels,
    install_docbin_hook,
    install_extensions,
    restore_vector_hooks,
    set_sent_labels,
    set_sent_sections,
)
from .long_docs import process_long_text
from .readers.papers import read_paper, read_papers
from .util import install_fork_hook, load_parser, resolve_hf_model, resolve_pipeline_name

install_extensions()
install_docbin_hook()
install_fork_hook()

__all__ = [
    "__version__",
    "LABEL_COLORS",
    "displacy_options",
    "install_extensions",
    "restore_vector_hooks",
    "set_sent_labels",
    "set_sent_sections",
    "get_sent_labels",
    "load_parser",
    "process_long_text",
    "read_paper",
    "read_papers",
    "resolve_hf_model",
    "resolve_pipeline_name",
]
