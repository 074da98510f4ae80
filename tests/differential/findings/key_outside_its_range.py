# Finding: a key outside 1..K is accepted by write and read (issue 11, item 6).
#
# The pool has keys=1. ownership/kernel.py, write(), stores `key` in the page's content, whose
# domain (KeyDomain) is 0..K+1: key=2 is taken for "k0" (KV from before the trace) and key=0
# for "never written"; only key=K+2 fails, as an out-of-domain write of the kernel's own slot.
# read() compares with any key. The reference should raise a SpecError on both marked lines;
# every engine instead reports the stale-read that the mislabelled content causes.
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference violated at depth 1: stale-read; 1 states, 1 transitions, deepest 0, longest execution 0; events: depth 1: stale-read
#   explicit  violated stale-read in 1 steps
#   batch     violated stale-read in 1 steps
#   symmetry  violated stale-read in 1 steps
#   bmc       violated stale-read in 1 steps
#   prove     violated stale-read in 1 steps
#   fuzz      violated stale-read in 1 steps
#     reference: line 32 (a key outside 1..K given to write or read of a keyed pool): ran in prefill(r=r1) at depth 1 without a spec error
#     reference: line 33 (a key outside 1..K given to write or read of a keyed pool): ran in prefill(r=r1) at depth 1 without a spec error
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference spec-error at depth 1: key_outside_its_range.py:38; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at key_outside_its_range.py:38
#   loader    refuses it: in action prefill(r=r1): write(): key 2 is outside 1..1, the keys of pool kv
# (end of answers)

from ownership import Request, Spec, action, pool


class KeyOutsideItsRange(Spec):
    kv = pool(1, keys=1)

    @action
    def prefill(self, s, r: Request):
        got = s.alloc("kv", r, 1)
        s.write("kv", r, got, key=2)  # seeded: key
        s.read("kv", r, got, key=0)  # seeded: key
