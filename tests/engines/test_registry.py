"""One table of engines and the options each takes (ownership/registry.py, issue 30 item 2).

Every option of `api.check` that not every engine takes is in the table, and giving it to an
engine that does not take it is refused with the table's words, before the spec is loaded;
the engines that take it get past that check."""

from __future__ import annotations

import inspect

import pytest

from ownership import api, registry
from ownership.errors import UsageError

#: A value that says "given" for each option of the table.
SAMPLE = {"symbolic": ("decode_pool",), "runs": 5, "steps": 5, "seed": 1, "profile": "ci", "symmetry": True,
          "max_memory": 1 << 30, "searches": 2, "checkpoint": "ckpt", "resume": "ckpt", "ray": "local",
          "native": True, "max_states": 10, "max_depth": 3}

#: The options of api.check that every engine takes (or that it checks in other ways).
COMMON = {"spec", "params", "fixes", "version", "skip", "only", "engine", "max_seconds", "reporter", "database", "workers",
          "measure", "liveness"}

MISSING = "no/such/spec.py"  # (a refusal before loading never reads it)


def test_every_engine_specific_option_of_api_check_is_in_the_table():
    keywords = set(inspect.signature(api.check).parameters)
    assert keywords - COMMON == {o.keyword for o in registry.OPTIONS} == set(SAMPLE)


@pytest.mark.parametrize("option", registry.OPTIONS, ids=lambda o: o.keyword)
def test_an_option_given_to_an_engine_that_does_not_take_it_is_refused_before_loading(option):
    for engine in set(registry.ENGINES) - set(option.engines):
        with pytest.raises(UsageError) as refused:
            api.check(MISSING, engine=engine, **{option.keyword: SAMPLE[option.keyword]})
        assert str(refused.value) == option.refusal.format(engine=engine)


@pytest.mark.parametrize("option", registry.OPTIONS, ids=lambda o: o.keyword)
def test_the_engines_that_take_an_option_get_past_the_table(option):
    for engine in option.engines:
        registry.refuse_foreign(engine, {option.keyword: SAMPLE[option.keyword]})


def test_an_unknown_engine_is_refused_with_the_list():
    with pytest.raises(UsageError, match="unknown engine 'tlc'; available: explicit, bmc, fuzz"):
        api.check(MISSING, engine="tlc")


def test_the_table_says_which_engines_give_shortest_counterexamples():
    assert [e.name for e in registry.ENGINES.values() if e.exhaustive] == ["explicit", "bmc"]
    assert api.ENGINES == tuple(registry.ENGINES)


def test_each_engine_declares_its_options_in_a_frozen_settings_class():
    """Each engine's settings are options of api.check; a run's settings hold what it gave,
    and cannot be changed once made."""
    import dataclasses

    keywords = set(inspect.signature(api.check).parameters)
    for engine in registry.ENGINES.values():
        names = {f.name for f in dataclasses.fields(engine.settings)}
        assert names <= keywords, (engine.name, names - keywords)
        for option in registry.OPTIONS:
            assert (engine.name in option.engines) == (option.keyword in names)
    chosen = registry.settings_for("fuzz", {"runs": 7, "seed": 3, "workers": None, "measure": False})
    assert chosen == registry.FuzzSettings(runs=7, seed=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        chosen.runs = 8  # type: ignore[misc]
    assert registry.settings_for("bmc", {"symbolic": ("decode_pool",), "max_depth": 4}) == \
        registry.BmcSettings(max_depth=4, symbolic=("decode_pool",))
