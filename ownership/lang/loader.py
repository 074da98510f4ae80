"""Loading a spec: from a file path or a shipped name to a validated Model.

`load_spec("specs/sglang_pd.py")` or `load_spec("sglang_pd")` imports the file and finds its
Spec class (`file.py:ClassName` picks one when a file defines several). A bare name is a
shipped spec only, never a file of the working directory (NOTE(no-code-from-cwd)).
ownership.interpret.validate.build_model then instantiates it and traces every action once.
Every failure is a SpecError or UsageError.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from ..errors import OwnershipError, SpecError, UsageError
from .failure import spec_failure
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



def shipped_specs() -> dict[str, Path]:
    """The shipped specs by name (file stem), e.g. {"sglang_pd": .../specs/sglang_pd.py}."""
    where = shipped_dir()
    if where is None or not where.is_dir():
        return {}
    return {p.stem: p for p in sorted(where.glob("*.py")) if not p.name.startswith("_") and p.is_file()}


def split_ref(ref: str) -> tuple[str, str | None]:
    """A spec reference's file or name and its `:ClassName`, if it ends with one."""
    base, sep, cls_name = ref.rpartition(":")
    if sep and base and cls_name.isidentifier():
        return base, cls_name
    return ref, None


def is_path(base: str) -> bool:
    """Whether a reference typed by the user names a file: it contains a `/` or ends in `.py`."""
    return "/" in base or os.sep in base or base.endswith(".py")


def resolve_spec_path(ref: str, *, shipped_only: bool = False) -> tuple[Path, str | None]:
    """A spec reference to a file and class name.

    NOTE(no-code-from-cwd): a bare name (`sglang_pd`, `sglang_pd:SGLangPD`) is a shipped spec
    and nothing else, whatever files the working directory holds; a path is a path only when
    it looks like one (`is_path`: `specs/x.py`, `x.py`, `x.py:Class`, `dir/x`), as only a user
    types it on the command line. `shipped_only`: the reference comes from a trace file, which
    may name a shipped spec but never makes ownership load a file."""
    base, cls_name = split_ref(ref)
    shipped = shipped_specs()
    names = ", ".join(shipped) or "(none installed)"
    if is_path(base) and not shipped_only:
        path = Path(base)
        if path.is_file():
            return path, cls_name
        raise UsageError(f"no spec file or shipped spec named {base!r}." + did_you_mean(path.stem, shipped)
                         + f" Give a path to a .py file, or one of the shipped specs: {names}.")
    if base in shipped:
        return shipped[base], cls_name
    if shipped_only:
        raise UsageError(f"{ref!r} is not a shipped spec ({names}); a trace never makes ownership load a file:"
                         " say which spec to use with --spec PATH")
    raise UsageError(
        f"no shipped spec named {base!r}." + did_you_mean(base, shipped)
        + f" The shipped specs: {names}; for a file, give its path (./{base}.py or dir/{base}.py)."
    )


def load_spec(ref: str, *, shipped_only: bool = False) -> type[Spec]:
    """Import a spec file (or shipped spec) and return its Spec class (`shipped_only`: see
    resolve_spec_path). Anything the module's top level raises, SystemExit included, is a
    SpecError at its line; Ctrl-C and a command's limits (KeyboardInterrupt) pass through."""
    path, cls_name = resolve_spec_path(ref, shipped_only=shipped_only)
    module_name = f"ownership_spec_{abs(hash(str(path.resolve())))}"
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read spec file {path}: {e}") from None
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as e:
        raise SpecError(f"syntax error: {e.msg}", file=str(path), line=e.lineno) from None
    except ValueError as e:  # e.g. a null byte in the source
        raise SpecError(f"cannot compile the spec: {e}", file=str(path)) from None
    except RecursionError:  # an expression nested too deeply for Python's compiler (1+1+...+1)
        raise SpecError("cannot compile the spec: an expression is nested too deeply for Python's compiler;"
                        " split it into several statements", file=str(path)) from None
    spec_mod = importlib.util.spec_from_loader(module_name, loader=None, origin=str(path))
    assert spec_mod is not None
    module = importlib.util.module_from_spec(spec_mod)
    module.__file__ = str(path)
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)
    except OwnershipError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # SystemExit too: a spec that exits while loading is a spec error
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
