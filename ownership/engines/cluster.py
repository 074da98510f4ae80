"""Ray, for the searches that spread over processes or machines (`--ray ADDRESS`).

Ray is an optional extra (`pip install 'ownership[ray]'`): it is imported here and nowhere
else, and only when a search asks for it. This module connects to a cluster (or starts a local
one), says how many CPUs it has, and carries a `Recipe`: how a worker builds the same Model
again (a Model holds traced code and is not shipped; each worker loads the spec itself, from
the same file or, on a machine that lacks it, from the source text the driver read).

Engines never print: Ray's own logging is set to errors only, and its workers' output is not
forwarded to the terminal.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..lang.model import Model

INSTALL = "pip install 'ownership[ray]'"


def ray_module() -> Any:
    """Ray, or a UsageError that says how to install it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (Ray's import may warn of its own deprecations)
            import ray
    except ImportError:
        raise UsageError(f"--ray needs Ray, an optional extra: {INSTALL}") from None
    return ray


@contextlib.contextmanager
def connected(address: str, *, cpus: int | None = None) -> Iterator[Any]:
    """Ray connected to `address` for the duration: `local` starts a Ray instance on this
    machine's CPUs (or `cpus` of them) and stops it afterwards; any other address (`auto`, `ray://host:10001`,
    `host:6379`) joins a running cluster and leaves it running. A driver already connected
    (a test's fixture, a notebook) is used as it is."""
    ray = ray_module()
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR,
                               "include_dashboard": False, "configure_logging": True}
    if address == "local":
        options["num_cpus"] = cpus or os.cpu_count() or 1
    else:
        options["address"] = address
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local instance needs no token
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ray.init(**options)
    except (ConnectionError, ValueError, RuntimeError) as e:
        raise UsageError(f"--ray {address}: cannot connect to a Ray cluster ({e}); give `local` to start one on"
                         " this machine, or the address of a running cluster (`ray start --head` prints it)") from None
    try:
        yield ray
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ray.shutdown()


def cluster_cpus(ray: Any) -> int:
    """The CPUs the connected cluster offers (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


@dataclass(frozen=True)
class Recipe:
    """How to build a model again in another process: the spec reference as the user gave it,
    its source text (for a machine that lacks the file), and what made the model."""

    spec: str
    source: str
    params: tuple[tuple[str, int], ...] = ()
    fixes: tuple[str, ...] = ()
    version: str | None = None
    skip: tuple[str, ...] = ()
    liveness: tuple[str, ...] = ()   # kernel liveness switched on for the check (--liveness)
    symmetry: bool = False
    # (the fingerprint of the model the driver built, which each worker's must equal)
    shape: tuple[int, ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, spec: str, model: Model, *, symmetry: bool = False) -> Recipe:
        from ..lang.loader import resolve_spec_path

        path, _ = resolve_spec_path(spec)
        return cls(spec=spec, source=path.read_text(), params=tuple(sorted(model.env.items())),
                   fixes=tuple(model.spec.fixes), version=model.spec.release, skip=tuple(sorted(model.skip)),
                   liveness=tuple(n for n in model.kernel_liveness if n not in model.spec_cls.liveness),
                   symmetry=symmetry, shape=shape_of(model))

    def digest(self) -> str:
        """What a checkpoint must match to be resumed: the spec's text and everything that made the model."""
        h = hashlib.sha256()
        for part in (self.spec, self.source, repr(self.params), repr(self.fixes), repr(self.version),
                     repr(self.skip), repr(self.liveness), repr(self.symmetry)):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def build(self) -> Model:
        """The model, built as the driver built it (ownership.api.model_for); from the source
        text when this machine does not hold the same file."""
        from .. import api
        from ..errors import InternalError
        from ..lang.loader import is_path, split_ref

        spec = self.spec
        base, cls_name = split_ref(spec)
        if is_path(base) and not (Path(base).is_file() and Path(base).read_text() == self.source):
            where = Path(tempfile.mkdtemp(prefix="ownership-spec-")) / Path(base).name
            where.write_text(self.source)
            spec = str(where) + (f":{cls_name}" if cls_name else "")
        model = api.model_for(spec, params=dict(self.params), fixes=self.fixes, version=self.version,
                              skip=self.skip, liveness=self.liveness)
        if self.shape and shape_of(model) != self.shape:
            raise InternalError(f"a worker built a different model from {self.spec} ({shape_of(model)} against the"
                                f" driver's {self.shape})")
        return model


def shape_of(model: Model) -> tuple[int, ...]:
    """A cheap fingerprint of a built model: its state width, bindings and requests."""
    return (model.width, len(model.bindings), model.requests, len(model.initial))
