# Finding: a page outside its pool, given to a kernel operation, is dropped without a word
# (issue 11, item 6).
#
# The pool has one page; `page(1)` is not one of its pages. Every kernel loop runs over
# `s._members(pages, size)` (ownership/kernel.py): the concrete interpreter masks the set to the
# pool (ConcreteState._members), the tracer visits range(size), so page 1 is ignored by every
# interpreter: the transfer "into page 1" is no transfer, and all engines agree on the
# stale-read of the source page. The reference should raise a SpecError on the marked line.
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
#     reference: line 32 (a page outside its pool given to a kernel operation): ran in send(r=r1) at depth 1 without a spec error
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference spec-error at depth 1: page_outside_its_pool.py:43; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at page_outside_its_pool.py:43
#   explicit  spec-error at page_outside_its_pool.py:43: in action send(r=r1): send(), the destination: page 1 outside pool kv (pages 0..0)
#   batch     spec-error at page_outside_its_pool.py:43: in action send(r=r1): send(), the destination: page 1 outside pool kv (pages 0..0)
#   symmetry  spec-error at page_outside_its_pool.py:43: in action send(r=r1): send(), the destination: page 1 outside pool kv (pages 0..0)
#   bmc       spec-error at page_outside_its_pool.py:43: in action send(r=r1): send(), the destination: page 1 outside pool kv (pages 0..0)
#   prove     spec-error at page_outside_its_pool.py:43: in action send(r=r1): send(), the destination: page 1 outside pool kv (pages 0..0)
#   fuzz      spec-error at page_outside_its_pool.py:43: in action send(r=r1): send(), the destination: page 1 outside pool kv (pages 0..0)
# (end of answers)

from ownership import Request, Spec, action, page, pool


class PageOutsideItsPool(Spec):
    kv = pool(1)

    @action
    def send(self, s, r: Request):
        got = s.alloc("kv", r, 1)
        s.send(r, "kv", got, "kv", page(1))  # seeded: page
