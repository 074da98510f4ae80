"""The spec language: declarations, values, the state view, models and the loader."""

# NOTE(state-name): the submodule ownership.lang.state (the state view) is imported first, so
# that the declaration `state` below, not the module, is what `ownership.lang.state` names.
from . import state as _state_view  # noqa: F401, I001 (first: NOTE(state-name))

from .declare import (
    Request,
    action,
    array,
    eventually,
    fix,
    ints,
    invariant,
    leads_to,
    lemma,
    measure,
    param,
    per_page,
    per_request,
    pool,
    sometimes,
    state,
)
from .spec import Spec
from .values import If, Max, Min, all_of, any_of, count, first, has, nth, page, select, without

__all__ = [
    "If", "Max", "Min", "Request", "Spec", "action", "all_of", "array", "any_of", "count", "eventually", "first", "fix",
    "has", "ints", "invariant", "leads_to", "lemma", "measure", "nth", "page", "param", "per_page", "per_request", "pool",
    "select", "sometimes", "state", "without",
]
