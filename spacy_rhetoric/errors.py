"""The base class of the project's user-facing errors.

A :class:`RhetoricError` means "the input, option or file the user gave
cannot be used" and its message names the file / line / field: the CLI
(``cli.common.guard``) prints it as one line and exits 1. It subclasses
``ValueError``, so library callers that catch ``ValueError`` keep working.
Anything else, a plain ``ValueError`` included (raised inside numpy, torch,
... or by one of the package's internal checks), is a programming error and
keeps its traceback: raise ``RhetoricError`` (or a subclass) for a message
meant for the user.
"""


class RhetoricError(ValueError):
    """A user-facing error of spacy_rhetoric (one line, names what is wrong)."""
