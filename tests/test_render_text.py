"""Text rendering of values: large pools stay readable."""

from ownership.render.text import show_value


def test_a_long_list_is_shown_as_runs():
    """Runs of equal values and ascending page numbers are compressed; short lists are not."""
    assert show_value(["r1", "r1"] + ["r0"] * 4094) == "[r1×2 r0×4094]"
    assert show_value(list(range(3, 4096))) == "[3..4095]"
    assert show_value([0, 5, 6] + list(range(10, 30))) == "[0 5 6 10..29]"
    assert show_value([1, 2, 3]) == "[1 2 3]"


def test_many_requests_show_only_those_that_differ():
    """A per-request slot of 64 requests shows the common value and the exceptions."""
    value = {f"r{i}": "NEW" for i in range(1, 65)}
    value["r7"] = "QUEUED"
    assert show_value(value) == "all=NEW except r7=QUEUED"
