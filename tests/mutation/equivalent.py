"""Mutants of tests/mutation/run.py judged equivalent: no spec can tell them from the original.

Per target, mutant key -> the reason. run.py counts these apart from the survivors (the score
is killed / (total - equivalent)); an entry whose mutant no longer exists is reported.
"""

EQUIVALENT: dict[str, dict[str, str]] = {
    "ownership/kernel.py": {},
    "ownership/engines/symmetry.py": {},
}
