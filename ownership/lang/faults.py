"""Spec errors that depend on the state: the concrete interpreter raises them, the tracer records them.

A division by a slot that can be 0, a write of a value outside its slot's domain (at any write,
not only the last one of an action), a page set reaching outside its pool, a request or key id
out of range: whether these happen depends on the state an action runs in. The concrete
interpreter raises a SpecError when one happens (ownership.interpret.concrete); the symbolic
tracer records, in program order among the action's guards, the condition under which it
would (ownership.ir.tracer, `Traced.events`), so that the batch and z3 engines find
the same errors in the same states and ask the concrete interpreter for the message.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The kinds of state-dependent spec errors, with what each is in words.
KINDS: dict[str, str] = {
    "domain": "a value outside its slot's domain",
    "division": "a division or modulo by zero",
    "shift": "a shift by a negative count",
    "index": "an index outside its slot's range",
    "pool": "a page outside its pool",
    "request": "a request id outside 1..requests",
    "key": "a content key outside the pool's keys",
    "alloc": "an allocation of a negative number of pages",
    "count": "a holder taking more references (or pins) to a page than its pool counts",
}


@dataclass(frozen=True)
class Fault:
    """Where a state-dependent spec error can happen: its kind and the spec's file and line."""

    kind: str
    file: str | None
    line: int | None

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file and self.line else (self.file or "?")

    def describe(self) -> str:
        return f"{KINDS[self.kind]} at {self.where()}"


def domain_message(element: str, value: int, lo: int, hi: int) -> str:
    return (f"{element} := {value} is outside its domain {lo}..{hi}. Widen the slot's domain, or"
            " guard the action with s.require(...) before the write")


#: How to avoid a division by zero, by where it happens: an action is guarded with s.require;
#: a property (an invariant, a sometimes, a liveness property, a measure, finished) has no
#: s.require, so the division is guarded in its own expression (`for_property`).
_DIVISION_HINT = "Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)"
_DIVISION_HINT_PROPERTY = ("Guard the division in the property's own expression: divide by If(d == 0, 1, d)"
                           " (s.require guards actions, not properties)")


def division_message(op: str) -> str:
    """The message of a division by zero, with an action's hint (`for_property` changes it)."""
    return f"`{op}` by zero. {_DIVISION_HINT}"


def for_property(message: str) -> str:
    """A spec error's message as it reads when a property raised it, not an action: a division's
    hint guards the division in the property's expression instead of naming s.require."""
    return message.replace(_DIVISION_HINT, _DIVISION_HINT_PROPERTY)


def shift_message(count: int) -> str:
    return f"a shift by a negative count ({count})"


def index_message(index: int, name: str, lo: int, hi: int) -> str:
    return f"index {index} is out of range for {name} ({lo}..{hi})"


def pool_message(op: str, pool: str, pages: list[int], size: int) -> str:
    return (f"{op}: page{'s' if len(pages) != 1 else ''} {', '.join(map(str, pages))} outside pool"
            f" {pool} (pages 0..{size - 1})")


def request_message(op: str, r: int, requests: int) -> str:
    return f"{op}: {r} is not a request (requests are 1..{requests})"


def key_message(op: str, key: int, pool: str, keys: int) -> str:
    return f"{op}: key {key} is outside 1..{keys}, the keys of pool {pool}"


def alloc_message(pool: str, n: int) -> str:
    return f"alloc({pool!r}, r, {n}): a request cannot take a negative number of pages"


def count_message(op: str, pool: str, page: int, who: str, counted: int) -> str:
    return (f"{op}: {who} would hold pool {pool} page {page} more than {counted} time{'s' if counted != 1 else ''},"
            f" the most that pool {pool} counts (pool(..., counted={counted})): raise counted, or require"
            f" s.references({pool!r}, {page}, ...) < {counted} before taking one more")


__all__ = ["KINDS", "Fault", "alloc_message", "count_message", "division_message", "domain_message", "for_property",
           "index_message", "key_message", "pool_message", "request_message", "shift_message"]
