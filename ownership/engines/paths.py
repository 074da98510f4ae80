"""From a stored path to the run it stands for: shared by the packed searches (batch,
partitioned, native), which keep each state's parent and the binding that reached it.

A path of stored states (representatives, under symmetry) and bindings is replayed from the
initial state by the concrete interpreter (ownership.interpret.concrete): the real states
and, under symmetry, each binding renamed for the real predecessor. A spec error that the
packed search found on the path is raised concretely, with the steps that reach it.
"""

from __future__ import annotations

import itertools

from ..errors import InternalError, SpecError
from ..interpret.concrete import Concrete
from ..lang.model import Model


def actual_run(model: Model, symmetric: bool, stored: list[tuple[int, ...]],
               steps: list[int]) -> tuple[list[tuple[int, ...]], list[int]]:
    """The real run behind a path of stored states and bindings (steps may be one longer
    than the path: its last step leaves the stored states). Under symmetry each binding is
    renamed so that it applies to the real predecessor. A step that raises a SpecError
    raises it with the steps before it (only the last step of a path may)."""
    interp = Concrete(model)
    perms = list(itertools.permutations(range(1, model.requests + 1)))
    maps = {}
    if symmetric:
        from .symmetry import apply_concrete, binding_map

        maps = {p: binding_map(model, p) for p in perms}
    actual = [model.initial]
    bindings: list[int] = []
    for i, b in enumerate(steps):
        real = b
        if symmetric:
            perm = next(p for p in perms if apply_concrete(model, p, stored[i]) == actual[-1])
            real = maps[perm][b]  # type: ignore[index]
        elif i + 1 < len(stored):
            actual.append(stored[i + 1])
            bindings.append(real)
            continue
        try:
            out = interp.step(actual[-1], model.bindings[real])
        except SpecError as e:
            if i + 1 != len(steps):
                raise InternalError(f"step {i + 1} of a stored path raises a spec error: {e}") from None
            e.steps = [model.bindings[x].label() for x in bindings]
            raise
        if out is None:
            raise InternalError("a step of the batch engine's path is disabled concretely"
                                " (the batch and concrete interpreters, or the symmetry check, disagree)")
        actual.append(out.state)
        bindings.append(real)
    return actual, bindings


def raise_state_error(model: Model, symmetric: bool, stored: list[tuple[int, ...]], via: list[int]) -> None:
    """The last state of a stored path makes a property raise a spec error: raise it
    concretely, with the steps that reach the state."""
    states, bindings = actual_run(model, symmetric, stored, via)
    try:
        Concrete(model).state_flags(states[-1])
    except SpecError as e:
        e.steps = [model.bindings[b].label() for b in bindings]
        raise
    raise InternalError("the batch interpreter found a spec error in a state property that the concrete"
                        " interpreter does not raise")


def raise_step_error(model: Model, symmetric: bool, stored: list[tuple[int, ...]], via: list[int], b: int) -> None:
    """The step by binding b from the last state of a stored path raises a spec error: raise
    it concretely, with the steps that reach its state."""
    actual_run(model, symmetric, stored, via + [b])
    raise InternalError("the batch interpreter found a spec error in a step that the concrete"
                        " interpreter does not raise")
