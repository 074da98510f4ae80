"""Following an event log on a spec: the protocol's own properties checked on what an engine did.

`ownership monitor EVENTS --spec SPEC --adapter FILE.py:NAME` checks the log with the kernel
(ownership.bridges.monitor) and, beside it, runs the spec along the log: the adapter, the user's
code, says which spec actions each event stands for, and the concrete interpreter (the
semantics of every engine) fires them one after the other from the spec's initial state.

The adapter is a callable (a function, or a class: one instance is made, with no arguments,
and called for every event) taking an Event and returning the actions it stands for: None or
an empty list for none, else an iterable of `(action, {argument: value})`. A Request
argument takes the engine's own request id: each new id is named with the spec's next
request (r1, r2, ...), so the spec needs as many requests as the log has (`--param
requests=N`); any other argument takes its value as a trace shows it (an int, a name).

What the follower reports, at the line of the event:
- `diverged`: an action the spec does not allow in the state the log has led it to (the
  engine did what the protocol forbids, or the log misses an event); a violation;
- a property of the spec that fails (its invariants, the kernel's properties on the spec's
  own pages): a violation, with the spec's run as its trace;
- AdapterError: the adapter raised, returned something that is not a list of actions, or
  named an action or argument the spec does not have (bad input, with the line);
- `exhausted`: the log starts more requests than the spec has; the follower stops there and
  says how far it got (never a pass).

Memory: the spec's state and its last FOLLOW_HISTORY steps, whatever the log's length. When
the whole run was kept, the trace starts at the spec's initial state and `ownership replay`
re-runs it; otherwise it starts at the first kept step. Nothing here prints.
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..errors import AdapterError, OwnershipError, SpecError
from ..interpret.concrete import Concrete
from ..lang.declare import RequestDomain, as_domain
from ..lang.model import Binding, Model
from ..trace import Trace, Violation, build_trace
from .monitor import Coverage, Event, Finding, Monitor

#: Spec steps kept for the trace of a finding.
FOLLOW_HISTORY = 4096
#: Actions one event may stand for.
MAX_ACTIONS_PER_EVENT = 64


@dataclass
class SpecFinding:
    """What the spec says of a log: a violated property or `diverged`, at one event."""

    event: Event
    property: str
    message: str
    trace: Trace


@dataclass
class Exhausted:
    """The log needs more requests than the spec has: where the follower stopped."""

    event: Event
    request: str
    requests: int


def _users_code(fn: Callable[[], Any], what: Callable[[BaseException], str]) -> Any:
    """Run the adapter's code: whatever it raises (SystemExit too) is an AdapterError in the
    words of `what`, what it prints goes to stderr (stdout holds the command's own answer,
    its JSON under --json); Ctrl-C and ownership's own errors pass through."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return fn()
    except (KeyboardInterrupt, OwnershipError):
        raise
    except BaseException as e:  # noqa: BLE001 (the user's code: sys.exit, GeneratorExit, ...)
        raise AdapterError(what(e)) from None


def _said(e: BaseException) -> str:
    """An exception of the user's code, as a message says it (its str may fail too)."""
    try:
        text = str(e)
    except Exception:  # noqa: BLE001
        text = "(its message cannot be shown)"
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def make_adapter(obj: Any, ref: str) -> Callable[[Event], Any]:
    """The callable an adapter object stands for (a class is instantiated once, no arguments)."""
    if isinstance(obj, type):
        cls = obj
        obj = _users_code(cls, lambda e: f"--adapter {ref}: making an instance of {cls.__name__} failed: {_said(e)}")
    if not callable(obj):
        raise AdapterError(f"--adapter {ref}: {type(obj).__name__} is not callable; give a function"
                           " event -> actions, or a class whose instances are")
    return obj  # type: ignore[no-any-return]


class Follower:
    """Runs a spec along a log, one event at a time (see the module docstring)."""

    def __init__(self, model: Model, adapter: Callable[[Event], Any], *, ref: str = "the adapter") -> None:
        self.model = model
        self.adapter = adapter
        self.ref = ref
        self.interp = Concrete(model)
        self.state = model.initial
        self.steps = 0
        self.requests: dict[str, str] = {}   # engine id -> the spec's request name
        self._free = [model.request_name(r) for r in range(1, model.requests + 1)]
        self._free.reverse()
        #: the kept steps: (state before, binding, line of the event)
        self._kept: deque[tuple[tuple[int, ...], Binding, int]] = deque(maxlen=FOLLOW_HISTORY)
        self._request_args = {
            decl.name: {a for a, d in decl.args
                        if isinstance(as_domain(d, f"action {decl.name}, argument {a}"), RequestDomain)}
            for decl in model.spec_cls._actions.values()
        }
        self._arg_names = {decl.name: [a for a, _ in decl.args] for decl in model.spec_cls._actions.values()}
        self.started_at_initial = True

    def feed(self, ev: Event) -> SpecFinding | Exhausted | None:
        """Fire the actions `ev` stands for; a finding, `Exhausted`, or None."""
        for name, args in self._actions(ev):
            binding = _users_code(partial(self._binding, ev, name, args),
                                  partial(self._fault, ev, name))
            if isinstance(binding, Exhausted):
                return binding
            found = self._fire(ev, binding)
            if found is not None:
                return found
        return None

    def _fault(self, ev: Event, name: str, e: BaseException) -> str:
        """The message of an adapter's fault while its action `name` is looked up."""
        return f"{self.ref} at line {ev.line}: its action {name!r}: {_said(e)}"

    def _actions(self, ev: Event) -> list[tuple[str, dict[str, Any]]]:
        where = f"line {ev.line}, {ev.label()}"
        return _users_code(lambda: self._listed(ev, where), lambda e: f"{self.ref} at {where}: {_said(e)}")

    def _listed(self, ev: Event, where: str) -> list[tuple[str, dict[str, Any]]]:
        """The adapter's answer for `ev` as a list of (action, arguments), checked."""
        got = self.adapter(ev)
        if got is None:
            return []
        if isinstance(got, str | bytes | dict) or not isinstance(got, Iterable):
            raise AdapterError(f"{self.ref} at {where}: returned {type(got).__name__}; return None or a list"
                               " of (action, {argument: value}) pairs")
        actions: list[tuple[str, dict[str, Any]]] = []
        for item in got:
            if len(actions) == MAX_ACTIONS_PER_EVENT:
                raise AdapterError(f"{self.ref} at {where}: more than {MAX_ACTIONS_PER_EVENT} actions for"
                                   " one event")
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                    and isinstance(item[1], dict)):
                raise AdapterError(f"{self.ref} at {where}: an action is a pair (name, {{argument: value}}),"
                                   f" got {type(item).__name__}")
            actions.append(item)
        return actions

    def _binding(self, ev: Event, name: str, args: dict[str, Any]) -> Binding | Exhausted:
        spec = self.model.spec_cls.__name__
        where = f"{self.ref} at line {ev.line}"
        names = self._arg_names.get(name)
        if names is None:
            raise AdapterError(f"{where}: {name!r} is not an action of spec {spec}"
                               f" (its actions: {', '.join(self._arg_names)})")
        if set(args) != set(names):
            raise AdapterError(f"{where}: action {name} takes the arguments ({', '.join(names)}),"
                               f" got ({', '.join(map(str, args))})")
        values = []
        for a in names:
            v = args[a]
            if a in self._request_args[name]:
                v = self._request(v, ev)
                if v is None:
                    return Exhausted(ev, str(args[a]), self.model.requests)
            values.append(v)
        binding = self.model.binding_of(name, tuple(values))
        if binding is None:
            shown = ", ".join(f"{a}={v!r}" for a, v in zip(names, values))
            raise AdapterError(f"{where}: {name}({shown}) is not an action of spec {spec} at"
                               f" {_setting(self.model)}: a value out of its argument's domain")
        return binding

    def _request(self, engine_id: Any, ev: Event) -> str | None:
        """The spec's name for an engine's request id; None when the spec has no request left."""
        if isinstance(engine_id, bool) or not isinstance(engine_id, str | int):
            raise AdapterError(f"{self.ref} at line {ev.line}: a request is the engine's id (a string or an"
                               f" integer), got {type(engine_id).__name__}")
        key = str(engine_id)
        name = self.requests.get(key)
        if name is None:
            if not self._free:
                return None
            name = self.requests[key] = self._free.pop()
        return name

    def _fire(self, ev: Event, binding: Binding) -> SpecFinding | None:
        before = self.state
        try:
            out = self.interp.step(before, binding)
        except SpecError as e:
            e.steps = e.steps or [b.label() for _, b, _ in self._kept] + [binding.label()]
            raise
        if out is None:
            return self._diverged(ev, binding)
        self._remember(before, binding, ev.line)
        self.state = out.state
        self.steps += 1
        flags = out.flags or self.interp.state_flags(out.state)
        if not flags:
            return None
        trace = self._trace(flags)
        v = trace.violation
        assert v is not None
        v.message = f"line {ev.line}, {ev.label()}, as {binding.label()}{self._renamed(binding)}: {v.message}"
        return SpecFinding(ev, v.property, v.message, trace)

    def _remember(self, before: tuple[int, ...], binding: Binding, line: int) -> None:
        if len(self._kept) == FOLLOW_HISTORY:
            self.started_at_initial = False
        self._kept.append((before, binding, line))

    def _renamed(self, binding: Binding) -> str:
        names = {v for _, v in binding.shown if isinstance(v, str)}
        pairs = [f"{spec} = {eid!r}" for eid, spec in self.requests.items() if spec in names]
        return f" ({', '.join(pairs)})" if pairs else ""

    def _trace(self, flags: list[Any]) -> Trace:
        """The spec's run over the kept steps, to its current state."""
        states = [s for s, _, _ in self._kept] + [self.state]
        return build_trace(self.model, states, [b for _, b, _ in self._kept], flags, engine="monitor")

    def _diverged(self, ev: Event, binding: Binding) -> SpecFinding:
        trace = self._trace([])
        requests = sorted({v for _, v in binding.shown if isinstance(v, str) and v in self.requests.values()})
        shown = self.model.show(self.state)
        where = "; ".join(
            f"{r}: " + ", ".join(f"{var}={_text(v[r])}" for var, v in shown.items() if isinstance(v, dict) and r in v)
            for r in requests)
        message = (f"line {ev.line}, {ev.label()}: the log does {binding.label()}{self._renamed(binding)},"
                   f" which spec {self.model.spec_cls.__name__} does not allow after the {self.steps} steps"
                   " the log led it through (its guard fails there"
                   + (f"; the spec has {where}" if where else "") + "): the engine did what the protocol"
                   " forbids, or the log misses an event before this one")
        trace.violation = Violation("diverged", len(trace.steps) - 1, message, requests)
        return SpecFinding(ev, "diverged", message, trace)


def _text(v: Any) -> str:
    """A shown value in a message: a page set as {0, 1}, anything else as it prints."""
    if isinstance(v, frozenset):
        return "{" + ", ".join(map(str, sorted(v, key=str))) + "}"
    return str(v)


def _setting(model: Model) -> str:
    return " ".join(f"{k}={v}" for k, v in model.env.items())


def run(events: Iterable[Event], monitor: Monitor, follower: Follower, *,
        tick: Callable[[Coverage], None] | None = None, every: int = 65536,
        ) -> tuple[Finding | SpecFinding | None, Exhausted | None]:
    """Feed every event to the kernel's monitor, then to the spec's follower: the first
    finding of either (the kernel's, when both find one at the same event), and where the
    follower ran out of requests (the kernel goes on to the end of the log without it)."""
    exhausted: Exhausted | None = None
    for ev in events:
        found = monitor.feed(ev)
        if found is not None:
            return found, exhausted
        if exhausted is None:
            got = follower.feed(ev)
            if isinstance(got, Exhausted):
                exhausted = got
            elif got is not None:
                return got, exhausted
        if tick is not None and monitor.coverage.events % every == 0:
            tick(monitor.coverage)
    return None, exhausted
