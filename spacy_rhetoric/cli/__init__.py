"""The ``spacy-rhetoric`` command line (typer).

Each sub-command lives in its own module and registers itself on ``app``
(``@app.command``); ``main`` imports the modules listed in
``COMMAND_MODULES`` before running the app, so importing the package stays
cheap. A module that fails to import is a real error and is raised.
"""
import importlib

import typer

app = typer.Typer(
    name="spacy-rhetoric",
    help="Rhetorical structure of scientific papers with spaCy.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Rhetorical structure of scientific papers with spaCy."""


# Sub-command modules (each does ``@app.command(...)``).
COMMAND_MODULES = [
    "spacy_rhetoric.cli.setup_models",
    "spacy_rhetoric.cli.convert",
    "spacy_rhetoric.cli.label",
    "spacy_rhetoric.cli.evaluate",
    "spacy_rhetoric.cli.link",
    "spacy_rhetoric.cli.align",
    "spacy_rhetoric.cli.split",
    "spacy_rhetoric.cli.assemble",
    "spacy_rhetoric.cli.demo",
    "spacy_rhetoric.cli.index",
    "spacy_rhetoric.cli.search",
    "spacy_rhetoric.cli.render",
    "spacy_rhetoric.cli.map",
    "spacy_rhetoric.cli.annotate",
    "spacy_rhetoric.cli.pretrain",
]


def load_commands() -> None:
    """Import every sub-command's module (``COMMAND_MODULES``), which adds
    its command to ``app``: what ``main`` does before running, and what a
    test does before invoking ``app``."""
    for name in COMMAND_MODULES:
        importlib.import_module(name)


def main() -> None:
    load_commands()
    app()


if __name__ == "__main__":
    main()
