"""Stand-ins for imports the engines make at module level but never use on the paths tested here.

torchvision's wheel is a CUDA build, so it is not installed; sglang imports
torchvision.transforms at module level (multimodal/internvl_utils.py, reached from
mem_cache/memory_pool.py). A stub package whose attributes are inert placeholders lets the
import succeed; calling anything in it raises, so a test that did use it would fail loudly.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any


class _Placeholder:
    """An attribute of a stubbed module: importable, refuses to be used."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> _Placeholder:
        return _Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self._name} is a stub (torchvision is not installed for the conformance tests)")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)


class _StubModule(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Placeholder(f"{self.__name__}.{attr}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds every torchvision.* module as a stub package."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        mod = _StubModule(spec.name)
        mod.__path__ = []
        mod.__version__ = "0.0.0+stub"
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def stub_torchvision() -> None:
    """Install the torchvision stub unless the real package is importable."""
    if any(isinstance(f, _StubFinder) for f in sys.meta_path):
        return
    if importlib.util.find_spec("torchvision") is not None:
        return  # a real one wins
    sys.meta_path.append(_StubFinder())
