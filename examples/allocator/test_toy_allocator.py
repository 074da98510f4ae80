"""A team's own tests of its allocator against the spec (run: pytest examples/allocator).

The unchecked allocator accepts a double free silently, so its conformance test is expected
to fail with `double-free`; the checked one refuses it and conforms.
"""

from toy_allocator_adapter import CheckedToyAllocatorAdapter, ToyAllocatorAdapter

from ownership.bridges.testing import check_conformance, conformance

SPEC = __file__.replace("test_toy_allocator.py", "toy_allocator_spec.py")


def test_the_checked_allocator_conforms_to_the_spec():
    """Every run matches the model page for page, and the double free is refused."""
    check_conformance(SPEC, CheckedToyAllocatorAdapter)


def test_the_unchecked_allocator_accepts_a_double_free():
    """Documented behaviour: without the check, a double free goes through silently."""
    result = conformance(SPEC, ToyAllocatorAdapter)
    assert result.kind == "double-free"
