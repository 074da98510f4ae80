"""Ray, for the searches that spread over processes or machines (`--ray ADDRESS`).

Ray is an optional extra (`pip install 'ownership[ray]'`): it is imported here and nowhere
else, and only when a search asks for it. This module connects to a cluster (or starts a local
one), says how many CPUs it has, and carries a `Recipe`: how a worker builds the same Model
again (a Model holds traced code and is not shipped; each worker loads the spec itself, from
the same file or, on a machine that lacks it, from the source text the driver read).

Engines never print: Ray's own logging is set to errors only, its workers' output is not
forwarded to the terminal, and the cluster's messages to the driver (a worker died) go to
standard error. Joining a running cluster is bounded (CONNECT_SECONDS, and the command's
limits): an address where no Ray cluster answers is bad input, never a wait for good.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError, shorten
from ..lang.model import Model
from ..limits import TICK

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


#: How long joining a running cluster may take (the address answering, then Ray's own
#: handshake) when no shorter --max-seconds stops it first: past it, no Ray cluster answers
#: at the address, exit 2 (issue 29: Ray's own connection took 41 s, in C++ code that no
#: signal interrupts).
CONNECT_SECONDS = 30.0

#: The port of a `ray://` address that names none (Ray Client's default).
CLIENT_PORT = 10001


@contextlib.contextmanager
def connected(address: str, *, cpus: int | None = None, timeout: float = CONNECT_SECONDS) -> Iterator[Any]:
    """Ray connected to `address` for the duration: `local` starts a Ray instance on this
    machine's CPUs (or `cpus` of them) and stops it afterwards, whatever RAY_ADDRESS says; any
    other address (`auto`, `ray://host:10001`, `host:6379`) joins a running cluster and leaves
    it running, or raises a UsageError when no Ray cluster answers there within `timeout`
    seconds (the command's limits stop it sooner). A driver already connected (a test's
    fixture, a notebook) is used as it is. Ray's messages to the driver (a worker died) go to
    standard error, never to standard output (issue 29: they broke `--json`)."""
    ray = ray_module()
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR,
                               "include_dashboard": False, "configure_logging": True}
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local instance needs no token
    if address == "local":
        # (`address="local"` starts an instance; without an address Ray would join the
        # cluster RAY_ADDRESS names, and refuse num_cpus there: issue 29)
        options |= {"address": "local", "num_cpus": cpus or os.cpu_count() or 1}
        _start(ray, address, options)
    else:
        options["address"] = address
        _join(ray, address, options, timeout)
    try:
        with _messages_to_stderr():
            yield ray
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ray.shutdown()


def _start(ray: Any, address: str, options: dict[str, Any]) -> None:
    """ray.init, its refusals as one UsageError."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ray.init(**options)
    except (ConnectionError, ValueError, RuntimeError) as e:
        raise UsageError(f"--ray {shorten(address)}: cannot connect to a Ray cluster ({shorten(str(e), 200)}); give"
                         " `local` to start one on this machine, or the address of a running cluster"
                         " (`ray start --head` prints it)") from None


def _join(ray: Any, address: str, options: dict[str, Any], timeout: float) -> None:
    """Join the running cluster at `address` within `timeout` seconds: first its port must
    accept a connection (refused at once: nothing listens), then Ray's handshake must end.
    Both wait in slices of TICK in this thread, so that Ctrl-C and the command's limits stop
    them; Ray's handshake runs in a thread of its own, which is left behind if it never ends."""
    deadline = time.monotonic() + timeout
    endpoint = _endpoint(ray, address)
    if endpoint is not None:
        _answers(address, *endpoint, deadline, timeout)
    done = threading.Event()
    abandoned = threading.Event()
    failure: list[BaseException] = []

    def init() -> None:
        try:
            _start(ray, address, options)
            if abandoned.is_set():  # (the driver gave up on it meanwhile)
                ray.shutdown()
        except BaseException as e:  # noqa: BLE001 (handed to the waiting thread)
            failure.append(e)
        finally:
            done.set()

    threading.Thread(target=init, name="ownership-ray-connect", daemon=True).start()
    try:
        while not done.wait(TICK):
            if time.monotonic() >= deadline:
                why = " (its port accepts connections, but Ray's handshake did not end)" if endpoint else ""
                raise UsageError(f"--ray {shorten(address)}: no Ray cluster answers there within {timeout:g} s{why};"
                                 " give the address `ray start --head` printed, or `local` to start one on this machine")
    except BaseException:
        abandoned.set()
        raise
    if failure:
        raise failure[0]


def _endpoint(ray: Any, address: str) -> tuple[str, int] | None:
    """The host and port that `address` names (`auto`: the cluster Ray finds, from RAY_ADDRESS
    or the last one started on this machine); None when it names no port to try first."""
    if address.startswith("ray://"):
        rest = address.removeprefix("ray://").split("/", 1)[0]
        default: int | None = CLIENT_PORT
    elif address == "auto":
        named = os.environ.get("RAY_ADDRESS", "")
        if named and named != "auto":  # (Ray's `auto` is RAY_ADDRESS first, a ray:// one too)
            return _endpoint(ray, named)
        try:
            from ray._private.services import canonicalize_bootstrap_address_or_die

            rest = canonicalize_bootstrap_address_or_die("auto")
        except ConnectionError as e:
            raise UsageError(f"--ray auto: {shorten(str(e), 200)}; give `local` to start a Ray instance on this"
                             " machine, or the address of a running cluster") from None
        except (ImportError, AttributeError, ValueError):  # (another Ray: its own connection decides)
            return None
        default = None
    else:
        rest, default = address, None
    host, sep, port = rest.rpartition(":")
    if sep and port.isdigit():
        return host.strip("[]"), int(port)
    return (rest, default) if default is not None and rest else None


def _answers(address: str, host: str, port: int, deadline: float, timeout: float) -> None:
    """A UsageError unless something accepts a connection at host:port before the deadline."""
    where = f"{shorten(host)}:{port}"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise UsageError(f"--ray {shorten(address)}: no Ray cluster answers at {where} (no answer within"
                             f" {timeout:g} s); give the address `ray start --head` printed, or `local`")
        try:
            with socket.create_connection((host, port), timeout=min(TICK * 5, left)):
                return
        except TimeoutError:
            continue
        except OSError as e:  # refused, unreachable, no such host
            reason = e.strerror or type(e).__name__
            raise UsageError(f"--ray {shorten(address)}: no Ray cluster answers at {where} ({reason}); give the"
                             " address `ray start --head` printed, or `local` to start one on this machine") from None


@contextlib.contextmanager
def _messages_to_stderr() -> Iterator[None]:
    """Ray prints the cluster's error messages to the driver ("(raylet) A worker died ...")
    on standard output, log_to_driver or not; send them to standard error instead, where
    they inform without breaking `--json` (issue 29)."""
    try:
        from ray._private import worker
    except ImportError:
        yield
        return
    original = getattr(worker, "print_to_stdstream", None)
    if original is None:  # (another Ray: the Ray tests of --json say whether it still needs this)
        yield
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    worker.print_to_stdstream = to_stderr
    try:
        yield
    finally:
        worker.print_to_stdstream = original


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
