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

import inspect
import sys
from typing import Any, ClassVar

from ..errors import SpecError, UsageError
from .declare import (
    FAIRNESS,
    LIVENESS_KINDS,
    ActionDecl,
    Fix,
    Param,
    ParamExpr,
    Pool,
    PropertyDecl,
    Slot,
    did_you_mean,
    kebab,
    param,
)


def _is_declaration(v: Any) -> bool:
    return isinstance(v, (Param, Fix, Pool, Slot)) or (
        callable(v) and (hasattr(v, "__ownership_action__") or hasattr(v, "__ownership_property__")))


class _Namespace(dict):  # type: ignore[type-arg]
    """A spec class body that notices a declaration replaced by a later one of the same name
    (an action named like its pool: the pool would silently be gone)."""

    def __init__(self) -> None:
        super().__init__()
        self.clashes: list[tuple[str, str | None, int | None]] = []

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self and (_is_declaration(self[key]) or _is_declaration(value)):
            frame = sys._getframe(1)
            self.clashes.append((key, frame.f_code.co_filename, frame.f_lineno))
        super().__setitem__(key, value)


class _SpecMeta(type):
    """Spec's metaclass: refuses a class body that declares one name twice."""

    @classmethod
    def __prepare__(mcs, name: str, bases: tuple[type, ...], **kw: Any) -> Any:
        return _Namespace()

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: Any, **kw: Any) -> Any:
        for key, file, line in getattr(ns, "clashes", ()):
            raise SpecError(f"spec {name} declares {key!r} twice (the second replaces the first,"
                            " e.g. an action named like a pool or a slot): give each a name of its own",
                            file=file, line=line)
        return super().__new__(mcs, name, bases, dict(ns), **kw)


#: Names a declaration must not take: the hooks of Spec (and, for a parameter, which becomes
#: an attribute of the spec object, the attributes Spec sets on it).
_SPEC_NAMES = frozenset({"finished", "releases", "source_file", "checks_leak"})
_INSTANCE_NAMES = frozenset({"env", "fixes", "release"})


def _state_names() -> set[str]:
    """What the state `s` of an action already means: a slot named `free` would be hidden by s.free()."""
    from .properties import OPERATIONS
    from .state import StateView

    return ({n for n in dir(StateView) if not n.startswith("__")} | set(OPERATIONS)
            | {"model", "vals", "traced", "flags"})


class Spec(metaclass=_SpecMeta):
    """Base class of every spec. Subclasses declare parameters, fixes, pools, slots and actions."""

    requests = param(2, "concurrent requests", minimum=1)

    #: Engine releases as named fix sets, e.g. {"0.5.20": ["post-forward-retire"]}:
    #: `--version 0.5.20` turns on exactly the fixes that release had (docs/spec-language.md).
    releases: ClassVar[dict[str, list[str]]] = {}

    #: The kernel's liveness properties this spec checks, by name (ownership.lang.properties
    #: LIVENESS: "eventually-released", "eventually-landed"); none unless named.
    liveness: ClassVar[tuple[str, ...]] = ()

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
                elif attr in params and isinstance(value, int) and not isinstance(value, bool):
                    # `requests = 1` in a subclass: the inherited parameter, with this default
                    # (not a plain attribute that the parameter's default would silently override)
                    inherited = params[attr]
                    params[attr] = Param(value, inherited.help, minimum=inherited.minimum)
                    params[attr].name = attr
                elif isinstance(value, Fix):
                    fixes[value.name] = value
                elif isinstance(value, Pool):
                    pools[attr] = value
                elif isinstance(value, Slot):
                    slots[attr] = value
                elif callable(value) and hasattr(value, "__ownership_action__"):
                    actions[attr] = _action_decl(value, dict(vars(klass)))
                elif callable(value) and hasattr(value, "__ownership_property__"):
                    props[kebab(attr)] = _property_decl(value, kebab(attr))
        _check_names(cls, params, pools, slots, actions, props)
        _check_derived(cls, params)
        cls._params, cls._fixes, cls._pools = params, fixes, pools
        cls._slots, cls._actions, cls._properties = slots, actions, props
        _check_liveness(cls)
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
        env = {name: p.default for name, p in cls._params.items() if p.derived is None}
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
        env = cls._derive(env)
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

    @classmethod
    def _derive(cls, env: dict[str, int]) -> dict[str, int]:
        """`env` with each derived parameter not given a value computed from the others, in
        declaration order (`capacity = param(context - 1, ...)`), checked against its minimum."""
        out = dict(env)
        for name, p in cls._params.items():
            if name in out:
                continue
            assert p.derived is not None
            value = p.derived.resolve(out)
            if value < p.minimum:
                given = ", ".join(f"{n}={out[n]}" for n in sorted(p.derived.names()))
                raise UsageError(f"parameter {name} = {p.derived!r} is {value} at {given}, below its minimum {p.minimum}"
                                 f" ({p.help}); give it a value with --param {name}=N, or change {given}")
            out[name] = value
        return {name: out[name] for name in cls._params}

    @classmethod
    def default_env(cls) -> dict[str, int]:
        """Every parameter at its default (derived ones computed from the others' defaults)."""
        return cls._derive({name: p.default for name, p in cls._params.items() if p.derived is None})

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


def _check_derived(cls: type, params: dict[str, Any]) -> None:
    """A derived parameter is computed from parameters of the spec declared before it."""
    before: list[str] = []
    for name, p in params.items():
        if p.derived is not None:
            unknown = sorted(p.derived.names() - set(before))
            if unknown:
                raise SpecError(f"parameter {name} = param({p.derived!r}, ...) of {cls.__name__} is computed from"
                                f" {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} not a parameter"
                                " declared before it: declare those first", file=inspect.getsourcefile(cls))
        before.append(name)


def _check_names(cls: type, params: dict[str, Any], pools: dict[str, Any], slots: dict[str, Any],
                 actions: dict[str, Any], props: dict[str, Any]) -> None:
    """Refuse declarations whose names mean something else already."""
    from .properties import LIVENESS, PROPERTIES

    file = inspect.getsourcefile(cls) if cls.__module__ != __name__ else None
    state_names = _state_names()
    for kind, names in (("pool", pools), ("slot", slots), ("action", actions), ("parameter", params)):
        for n in names:
            if n in _SPEC_NAMES or (kind == "parameter" and n in _INSTANCE_NAMES):
                raise SpecError(f"{kind} {n!r} of {cls.__name__} takes the name of a hook of Spec: rename it", file=file)
            if kind == "slot" and (n in state_names or n.startswith("_")):
                raise SpecError(f"slot {n!r} of {cls.__name__} would be hidden by s.{n} of the state (an"
                                " operation of the kernel or of ownership): rename it", file=file)
    for n, decl in props.items():
        if n in PROPERTIES or n in LIVENESS:
            raise SpecError(f"property {n!r} of {cls.__name__} has the name of the kernel's built-in property:"
                            " rename it (the kernel checks that one already)", file=file,
                            line=getattr(getattr(decl.fn, "__code__", None), "co_firstlineno", None))


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
    fair = fn.__ownership_action__.get("fair", False)
    if not _is_fairness(fair):
        raise SpecError(f"action {fn.__name__}: fair={fair!r}; give fair=True (or \"weak\": a binding that stays"
                        " enabled runs eventually) or fair=\"strong\" (one enabled again and again runs eventually)",
                        file=file, line=line)
    return ActionDecl(fn, fn.__name__, args, fn.__ownership_action__["actor"], FAIRNESS[fair])


def _is_fairness(value: Any) -> bool:
    return (value is True or value is False or value is None) or (isinstance(value, str) and value in FAIRNESS)


#: State properties that may take a request `r` as well: one condition per request, all of
#: which must hold (a violation names the requests it fails for).
PER_REQUEST_KINDS = ("invariant", "lemma")


def _property_decl(fn: Any, name: str) -> PropertyDecl:
    """A property method as declared; a liveness property, an invariant and a lemma may take a
    request `r` as well."""
    kind = fn.__ownership_property__
    names = list(inspect.signature(fn).parameters)
    each = kind in LIVENESS_KINDS or kind in PER_REQUEST_KINDS
    takes = "(self, s) or (self, s, r)" if each else "(self, s)"
    if names[:2] != ["self", "s"] or len(names) > (3 if each else 2):
        raise SpecError(f"property {fn.__name__} must take {takes}: self is the spec, s the state"
                        + (", r a request (the property holds for each request)" if each else "")
                        + f"; it takes ({', '.join(names)})",
                        file=inspect.getsourcefile(fn), line=fn.__code__.co_firstlineno)
    within = getattr(fn, "__ownership_within__", None)
    if within is not None and not isinstance(within, ParamExpr) and (
            isinstance(within, bool) or not isinstance(within, int) or within < 0):
        raise SpecError(f"property {fn.__name__}: within={within!r}; give a number of steps, 0 or more (an int or a"
                        " parameter)", file=inspect.getsourcefile(fn), line=fn.__code__.co_firstlineno)
    return PropertyDecl(fn, name, kind, per_request=len(names) == 3, within=within)


def _check_liveness(cls: Any) -> None:
    """The kernel liveness properties a spec names must exist (`liveness = (...)`)."""
    from .properties import LIVENESS

    names = cls.liveness
    if isinstance(names, str) or not isinstance(names, tuple | list) or not all(isinstance(n, str) for n in names):
        raise SpecError(f"{cls.__name__}.liveness = {names!r}: give a tuple of names of the kernel's liveness"
                        f" properties ({', '.join(LIVENESS)})", file=inspect.getsourcefile(cls))
    for n in names:
        if n not in LIVENESS:
            raise SpecError(f"{cls.__name__}.liveness names {n!r}, which is not a liveness property of the kernel;"
                            f" they are: {', '.join(LIVENESS)}." + did_you_mean(n, LIVENESS),
                            file=inspect.getsourcefile(cls))
