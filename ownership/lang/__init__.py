"""The spec language: declarations, values, the state view, models and the loader."""

from .declare import (
    Request,
    action,
    array,
    fix,
    ints,
    invariant,
    lemma,
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
    "If", "Max", "Min", "Request", "Spec", "action", "all_of", "array", "any_of", "count", "first", "fix",
    "has", "ints", "invariant", "lemma", "nth", "page", "param", "per_page", "per_request", "pool",
    "select", "sometimes", "state", "without",
]
