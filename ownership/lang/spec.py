"""The Spec base class: collects a spec's declarations and instantiates it at parameters and fixes.

    class Toy(Spec):
        pages = param(4, "decode pool, in pages")
        decode = pool(pages)
        stage = per_request(Stage, Stage.NEW)

        @action
        def start(self, s, r: Request): ...

Inside actions and properties, `self.pages` is the parameter's value (an int) and
`self.door_retire` is True when that fix is on: Python control flow on them is fine.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any, ClassVar

from ..errors import SpecError, UsageError
from .declare import ActionDecl, Fix, Param, Pool, PropertyDecl, Slot, kebab, param


class Spec:
    """Base class of every spec. Subclasses declare parameters, fixes, pools, slots and actions."""

    requests = param(2, "concurrent requests", minimum=1)

    #: Engine releases as named fix sets, e.g. {"0.5.20": ["post-forward-retire"]}:
    #: `--version 0.5.20` turns on exactly the fixes that release had (DESIGN.md section 3).
    releases: ClassVar[dict[str, list[str]]] = {}

    # Filled by __init_subclass__, in declaration order (base classes first).
    _params: ClassVar[dict[str, Param]] = {}
    _fixes: ClassVar[dict[str, Fix]] = {}
    _pools: ClassVar[dict[str, Pool]] = {}
    _slots: ClassVar[dict[str, Slot]] = {}
    _actions: ClassVar[dict[str, ActionDecl]] = {}
    _properties: ClassVar[dict[str, PropertyDecl]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        params: dict[str, Param] = {}
        fixes: dict[str, Fix] = {}
        pools: dict[str, Pool] = {}
        slots: dict[str, Slot] = {}
        actions: dict[str, ActionDecl] = {}
        props: dict[str, PropertyDecl] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                if isinstance(value, Param):
                    params[attr] = value
                elif isinstance(value, Fix):
                    fixes[value.name] = value
                elif isinstance(value, Pool):
                    pools[attr] = value
                elif isinstance(value, Slot):
                    slots[attr] = value
                elif callable(value) and hasattr(value, "__ownership_action__"):
                    actions[attr] = _action_decl(value, dict(vars(klass)))
                elif callable(value) and hasattr(value, "__ownership_property__"):
                    props[kebab(attr)] = PropertyDecl(value, kebab(attr), value.__ownership_property__)
        cls._params, cls._fixes, cls._pools = params, fixes, pools
        cls._slots, cls._actions, cls._properties = slots, actions, props
        for release, names in cls.releases.items():
            unknown = [n for n in names if n.replace("_", "-") not in fixes]
            if unknown:
                raise SpecError(
                    f"release {release!r} of {cls.__name__} names unknown fix(es) {', '.join(unknown)};"
                    f" fixes are: {', '.join(fixes) or '(none)'}",
                    file=inspect.getsourcefile(cls),
                )

    def __init__(self, params: dict[str, int] | None = None, fixes: list[str] | tuple[str, ...] = (),
                 release: str | None = None) -> None:
        cls = type(self)
        if release is not None:
            if release not in cls.releases:
                known = ", ".join(cls.releases) or "(this spec names no releases)"
                raise UsageError(
                    f"unknown version {release!r} for spec {cls.__name__}." + did_you_mean(release, cls.releases)
                    + f" Versions: {known}."
                )
            fixes = [*cls.releases[release], *fixes]
        self.release = release
        env = {name: p.default for name, p in cls._params.items()}
        for name, value in (params or {}).items():
            if name not in cls._params:
                raise UsageError(
                    f"unknown parameter {name!r} for spec {cls.__name__}."
                    + did_you_mean(name, cls._params) + f" Parameters: {', '.join(cls._params)}."
                )
            p = cls._params[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < p.minimum:
                raise UsageError(
                    f"parameter {name}={value!r}: must be an integer >= {p.minimum} ({p.help})."
                )
            env[name] = value
        chosen: list[str] = []
        for f in fixes:
            name = f.replace("_", "-")
            if name not in cls._fixes:
                known = ", ".join(cls._fixes) or "(this spec has none)"
                raise UsageError(
                    f"unknown fix {f!r} for spec {cls.__name__}." + did_you_mean(name, cls._fixes)
                    + f" Fixes: {known}."
                )
            if name not in chosen:
                chosen.append(name)
        self.env: dict[str, int] = env
        self.fixes: tuple[str, ...] = tuple(n for n in cls._fixes if n in chosen)
        for name, value in env.items():
            setattr(self, name, value)
        for name, fx in cls._fixes.items():
            setattr(self, fx.attr, name in chosen)

    # -- hooks a spec may override -------------------------------------------------------

    def finished(self, s: Any, r: int) -> Any:
        """Condition: request r has left the system on every node (the `leak` property then
        requires that it owns no page). The default, False, leaves `leak` unchecked."""
        return False

    # -- introspection ---------------------------------------------------------------------

    @classmethod
    def source_file(cls) -> str:
        try:
            return inspect.getsourcefile(cls) or "<unknown>"
        except TypeError:
            return "<unknown>"

    @classmethod
    def checks_leak(cls) -> bool:
        return cls.finished is not Spec.finished


def did_you_mean(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def _action_decl(fn: Any, namespace: dict[str, Any]) -> ActionDecl:
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    file = inspect.getsourcefile(fn)
    line = fn.__code__.co_firstlineno
    if len(names) < 2 or names[0] != "self" or names[1] != "s":
        raise SpecError(
            f"action {fn.__name__} must take (self, s, ...): self is the spec, s the state;"
            f" it takes ({', '.join(names)})",
            file=file, line=line,
        )
    args = []
    for name in names[2:]:
        ann = sig.parameters[name].annotation
        if ann is inspect.Parameter.empty:
            raise SpecError(
                f"action {fn.__name__}: argument {name!r} has no domain. Annotate it, e.g."
                f" `{name}: Request` or `{name}: ints(1, 3)`, so that the checker can enumerate it",
                file=file, line=line,
            )
        if isinstance(ann, str):  # `from __future__ import annotations` in the spec
            try:
                ann = eval(ann, fn.__globals__, namespace)  # the spec's own code, not a trace
            except Exception as e:
                raise SpecError(f"action {fn.__name__}: cannot evaluate the domain {ann!r} of {name!r}: {e}",
                                file=file, line=line) from None
        args.append((name, ann))
    return ActionDecl(fn, fn.__name__, args, fn.__ownership_action__["actor"])
