"""Hugging Face models and tokenizers loaded without ever running code from
their folder.

A model folder (a pipeline's, a paper folder's, a Hub name's) whose
``config.json`` or ``tokenizer_config.json`` has an ``auto_map`` asks
transformers to import Python files that come with it; left to its default,
transformers then prompts "Do you wish to run the custom code? [y/N]". Every
load in this package passes ``trust_remote_code=False``
(:data:`NO_REMOTE_CODE`), so such a folder is refused without a prompt and
without importing anything from it; :func:`no_remote_code` turns that
refusal into one :class:`~spacy_rhetoric.errors.RhetoricError` line naming
the folder. :class:`NoRemoteCode` wraps an ``Auto*`` class for code that
calls ``from_pretrained`` / ``from_config`` itself (spacy-transformers'
``HFShim`` when a saved pipeline is loaded).
"""
import re
from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import RhetoricError

NO_REMOTE_CODE = {"trust_remote_code": False}


def is_remote_code_refusal(err: BaseException) -> bool:
    """Whether ``err`` is transformers refusing a folder's own code
    (``trust_remote_code=False`` against an ``auto_map``)."""
    return isinstance(err, ValueError) and "trust_remote_code" in str(err)


def refused_source(err: BaseException) -> str:
    """The folder or name a transformers refusal names ("a model" if none)."""
    found = re.search(r"repository (\S+) contains custom code", str(err))
    return found.group(1) if found else "a model"


def refusal_text(name: Any) -> str:
    return (f"{name}: the model asks to run Python code of its own (auto_map in its config); "
            "spacy_rhetoric never runs code from a model, pipeline or paper folder")


@contextmanager
def no_remote_code(name: Any) -> Iterator[None]:
    """A transformers refusal inside the block (:func:`is_remote_code_refusal`)
    as one RhetoricError naming ``name``."""
    try:
        yield
    except ValueError as err:
        if is_remote_code_refusal(err):
            raise RhetoricError(refusal_text(name)) from None
        raise


class NoRemoteCode:
    """``cls`` (``AutoConfig``, ``AutoModel``, ``AutoTokenizer``) whose
    ``from_pretrained`` and ``from_config`` always get ``trust_remote_code=False``."""

    def __init__(self, cls: Any) -> None:
        self.cls = cls

    def from_pretrained(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("trust_remote_code", None)
        with no_remote_code(args[0] if args else kwargs.get("pretrained_model_name_or_path")):
            return self.cls.from_pretrained(*args, trust_remote_code=False, **kwargs)

    def from_config(self, config: Any, **kwargs: Any) -> Any:
        kwargs.pop("trust_remote_code", None)
        with no_remote_code(getattr(config, "_name_or_path", None) or "a saved model config"):
            return self.cls.from_config(config, trust_remote_code=False, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name == "cls" or name.startswith("__"):  # copy / pickle look these up before __init__ ran
            raise AttributeError(name)
        return getattr(self.cls, name)
