"""Loading a spec: from a file path or a shipped name to a validated Model.

`load_spec("specs/sglang_pd.py")` or `load_spec("sglang_pd")` imports the file and finds its
Spec class (`file.py:ClassName` picks one when a file defines several). `build_model(cls,
params, fixes)` instantiates it and traces every action symbolically once, so that a spec
error (Python control flow on state, an unknown slot, a wrong argument) is reported with
file and line before any engine runs. Every failure is a SpecError or UsageError.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from ..errors import OwnershipError, SpecError, UsageError
from .model import Model
from .spec import Spec, did_you_mean


def shipped_dir() -> Path | None:
    """Where the shipped specs live: the package ownership.specs (the repository's specs/)."""
    try:
        found = importlib.util.find_spec("ownership.specs")
    except ImportError:
        found = None
    if found is not None and found.submodule_search_locations:
        return Path(list(found.submodule_search_locations)[0])
    repo = Path(__file__).resolve().parent.parent.parent / "specs"
    return repo if repo.is_dir() else None

#: Above this many pages in a pool, validation traces at the spec's default parameters
#: instead: tracing unrolls loops over pages, and the defaults take the same Python paths.
VALIDATE_MAX_PAGES = 16


def shipped_specs() -> dict[str, Path]:
    """The shipped specs by name (file stem), e.g. {"sglang_pd": .../specs/sglang_pd.py}."""
    where = shipped_dir()
    if where is None or not where.is_dir():
        return {}
    return {p.stem: p for p in sorted(where.glob("*.py")) if not p.name.startswith("_")}


def resolve_spec_path(ref: str) -> tuple[Path, str | None]:
    """A spec reference (path, shipped name, optionally `:ClassName`) to a file and class name."""
    cls_name = None
    base = ref
    if ":" in ref and not os.path.exists(ref):
        base, cls_name = ref.rsplit(":", 1)
    path = Path(base)
    if path.is_file():
        return path, cls_name
    shipped = shipped_specs()
    if base in shipped:
        return shipped[base], cls_name
    if path.suffix != ".py" and not path.exists() and f"{base}" in {p.stem for p in shipped.values()}:
        return shipped[base], cls_name
    names = ", ".join(shipped) or "(none installed)"
    raise UsageError(
        f"no spec file or shipped spec named {base!r}." + did_you_mean(Path(base).stem, shipped)
        + f" Give a path to a .py file, or one of the shipped specs: {names}."
    )


def load_spec(ref: str) -> type[Spec]:
    """Import a spec file (or shipped spec) and return its Spec class."""
    path, cls_name = resolve_spec_path(ref)
    module_name = f"ownership_spec_{abs(hash(str(path.resolve())))}"
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read spec file {path}: {e}") from None
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as e:
        raise SpecError(f"syntax error: {e.msg}", file=str(path), line=e.lineno) from None
    spec_mod = importlib.util.spec_from_loader(module_name, loader=None, origin=str(path))
    assert spec_mod is not None
    module = importlib.util.module_from_spec(spec_mod)
    module.__file__ = str(path)
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)
    except OwnershipError:
        raise
    except Exception as e:
        raise spec_failure(e, str(path), "while loading the spec") from None
    classes = [
        v for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, Spec) and v is not Spec and v.__module__ == module_name
    ]
    if cls_name is not None:
        chosen = [c for c in classes if c.__name__ == cls_name]
        if not chosen:
            raise UsageError(
                f"{path} defines no spec class {cls_name!r}. It defines: "
                + (", ".join(c.__name__ for c in classes) or "none")
            )
        return chosen[0]
    if not classes:
        raise SpecError("defines no spec: a spec is a class deriving from ownership.Spec", file=str(path))
    if len(classes) > 1:
        names = ", ".join(c.__name__ for c in classes)
        raise UsageError(f"{path} defines several specs ({names}); pick one as {path}:ClassName")
    return classes[0]


def spec_failure(e: BaseException, path: str | None, doing: str) -> SpecError:
    """A SpecError for an exception raised by spec code, at the spec's innermost line."""
    file, line = None, None
    for frame in traceback.extract_tb(e.__traceback__):
        if path is not None and os.path.abspath(frame.filename) == os.path.abspath(path):
            file, line = frame.filename, frame.lineno
        elif path is None and "ownership" not in frame.filename:
            file, line = frame.filename, frame.lineno
    return SpecError(f"{type(e).__name__} {doing}: {e}", file=file or path, line=line)


def build_model(cls: type[Spec], params: dict[str, int] | None = None, fixes: Any = (),
                release: str | None = None, *, skip: Any = ()) -> Model:
    """Instantiate a spec at parameters, fixes and release, and validate it by symbolic tracing."""
    from ..interpret.symbolic import trace_model

    spec = cls(params=params, fixes=fixes, release=release)
    path = cls.source_file()
    try:
        model = Model(spec, skip=skip)
        small = all(p.size <= VALIDATE_MAX_PAGES for p in model.pools.values())
        check = model if small else Model(cls(params=None, fixes=spec.fixes))
        trace_model(check)
    except OwnershipError:
        raise
    except Exception as e:
        raise spec_failure(e, path, "while tracing the spec's actions") from None
    return model
