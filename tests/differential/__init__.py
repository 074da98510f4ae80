"""Differential testing of ownership's interpreters and engines (issue 11, item 4).

One spec has one meaning, defined by the concrete interpreter; every engine must find it.
This package holds the three parts of the test that guards that, used by
tests/engines/test_differential.py:

- `generator`: Hypothesis strategies that write random, well-sorted specs as Python source;
- `oracle`: a plain breadth-first search over the concrete interpreter that records, depth by
  depth, every property violated and every spec error raised;
- `runner`: runs each engine on a generated spec, compares its answer with the oracle, and
  writes a disagreeing spec to a file that reproduces it.

`findings/` holds one small spec per root cause of a disagreement found so far, each with a
comment saying what every engine answers.
"""
