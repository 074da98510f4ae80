"""Server arguments printed with Python's repr (ownership/config_check/arg_repr.py): read with
ast at the top level only, bounded before parsing, never evaluated; and through a whole log."""

from __future__ import annotations

import pytest
from conftest import ROOT

from ownership.config_check.arg_repr import ReprNotRead, read_arg_repr
from ownership.config_check.bounds import MAX_REPR_CHARS, MAX_REPR_DEPTH
from ownership.errors import ConfigError

INCIDENT_DECODE = (ROOT / "tests") / "data" / "config_check" / "sglang-0.5.19-decode-incident.log"


def test_a_nested_config_does_not_lend_its_figures_to_the_top_level():
    """The page size of ServerArgs is 64, not the 16 of the LoRA config inside it (a regex read 16)."""
    got = read_arg_repr("ServerArgs(model_path='m', lora_config=LoRAConfig(page_size=16), page_size=64)")
    assert got == {"model_path": "m", "page_size": 64}
    got = read_arg_repr("{'lora': {'page_size': 16}, 'page_size': 64, 'context_length': 1048576}")
    assert got["page_size"] == 64 and got["lora"] == {"page_size": 16} and got["context_length"] == 1048576


def test_literals_are_read_and_everything_else_is_left_out():
    got = read_arg_repr("ServerArgs(a=1, b=-2, c=1.5, d=None, e=True, f='x', g=[1, 2], h=(3,), "
                        "i=<Mode.FAST: 1>, j=SomeEnum.X, k=Config(), l={'x': 1})")
    assert got == {"a": 1, "b": -2, "c": 1.5, "d": None, "e": True, "f": "x", "g": [1, 2], "h": (3,),
                   "l": {"x": 1}}
    # a key named twice: no real repr does, and neither value can be believed (tests/cli/test_edge_audit.py)
    with pytest.raises(ConfigError, match="the key 'page_size' is named twice"):
        read_arg_repr("{'page_size': 16, 'page_size': 64}")


def test_code_in_a_repr_is_never_run(tmp_path, monkeypatch):
    """A call is no literal: read as no value, never evaluated (no marker file appears)."""
    monkeypatch.chdir(tmp_path)
    body = "ServerArgs(page_size=__import__('os').system('touch pwned'), context_length=8)"
    assert read_arg_repr(body) == {"context_length": 8}
    with pytest.raises(ReprNotRead):
        read_arg_repr("ServerArgs(page_size=(lambda: open('pwned', 'w'))())")
    with pytest.raises(ReprNotRead):
        read_arg_repr("{'a': 1 if open('pwned', 'w') else 2}")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("body", [
    "{'a': " + "[" * (MAX_REPR_DEPTH + 1) + "]" * (MAX_REPR_DEPTH + 1) + "}",
    "{'a': '" + "x" * MAX_REPR_CHARS + "'}",
    "ServerArgs(a=" + "f(" * 10_000 + ")" * 10_000 + ")",
    "{'a': 1 + 2}",
    "[1, 2, 3]",
    "ServerArgs(page_size=64",
], ids=["deep", "long", "deep-calls", "operator", "not-a-mapping", "unclosed"])
def test_a_repr_over_a_bound_or_not_a_repr_is_refused_with_the_reason(body):
    with pytest.raises(ReprNotRead) as err:
        read_arg_repr(body)
    assert str(err.value)


def test_an_integer_of_thousands_of_digits_is_not_converted():
    """It comes back as its digits (a string), which the figures refuse by name."""
    got = read_arg_repr("{'context_length': " + "9" * 5000 + "}")
    assert not isinstance(got.get("context_length"), int)


def test_a_log_line_of_server_args_is_read_at_the_top_level_only(tmp_path):
    """A whole SGLang log whose server_args carry a nested page size: the node's page size is
    the top-level 64, and its window the 1,048,576 tokens of the incident's decode node."""
    from ownership.config_check import read_log

    reading = read_log(INCIDENT_DECODE)
    assert reading.context_length is not None and reading.context_length.value == 1048576
    line = INCIDENT_DECODE.read_text().splitlines()[0]
    nested = line.replace("server_args={", "server_args={'lora_config': {'page_size': 16}, ", 1)
    log = tmp_path / "decode.log"
    log.write_text(nested + "\n" + "\n".join(INCIDENT_DECODE.read_text().splitlines()[1:]) + "\n")
    page = read_log(INCIDENT_DECODE).page_size
    assert page is not None and read_log(log).page_size.value == page.value != 16
