"""Every operation of the intermediate form (ownership/ir/ops.py) on state values (issue 30, 1).

Two integers x and y wander over -2..2 and a page set m over a pool of 3 pages; each action
writes one operation of the table, applied to them, into the result slots (out, flag, picked:
the two it does not compute go back to their first values, which keeps the state space to
about ten thousand states) (where the operation is a spec
error for some values, its guard keeps it out: those errors have specs of their own). Every
engine must reach the same states: tests/language/test_operations.py checks that tracing this spec gives
every operation of the table, and that each backend computes all of them alike."""

from ownership import (
    If,
    Request,
    Spec,
    action,
    count,
    first,
    ints,
    nth,
    page,
    per_request,
    pool,
    select,
    state,
    without,
)


class EveryOperation(Spec):
    requests = 1
    kv = pool(3)
    x = state(ints(-2, 2), 0)
    y = state(ints(-2, 2), 1)
    m = per_request(kv, 0)
    out = state(ints(-1000, 1000), 0)
    flag = state(bool, False)
    picked = per_request(kv, 0)

    @action
    def move(self, s, dx: ints(-1, 1), dy: ints(-1, 1)):
        s.require((s.x + dx >= -2) & (s.x + dx <= 2) & (s.y + dy >= -2) & (s.y + dy <= 2))
        s.x = s.x + dx
        s.y = s.y + dy

    @action
    def toggle(self, s, r: Request, p: ints(0, 2)):
        s.m[r] = s.m[r] ^ page(p)  # bitxor of page sets, bit

    @action
    def arithmetic(self, s, r: Request, op: ints(0, 4)):
        s.out = select([s.x + s.y, s.x - s.y, s.x * s.y, -s.x, s.x * 3 - s.y * 5], op)  # add sub mul neg select
        s.flag = False
        s.picked[r] = 0

    @action
    def division(self, s, r: Request):
        s.require(s.y != 0)
        s.out = s.x // s.y * 10 + s.x % s.y  # div mod
        s.flag = False
        s.picked[r] = 0

    @action
    def shifts(self, s, r: Request):
        s.require(s.y >= 0)
        s.out = (s.x << s.y) + (s.x >> s.y)  # shl shr
        s.flag = False
        s.picked[r] = 0

    @action
    def bits_of_integers(self, s, r: Request):
        s.out = (s.x & s.y) * 100 + (s.x | s.y) * 10 + (s.x ^ s.y)  # bitand bitor bitxor
        s.flag = False
        s.picked[r] = 0

    @action
    def comparisons(self, s, r: Request, which: ints(0, 5)):
        s.flag = select([s.x == s.y, s.x != s.y, s.x < s.y, s.x <= s.y, s.x > s.y, s.x >= s.y], which)
        s.out = 0
        s.picked[r] = 0

    @action
    def logic(self, s, r: Request, which: ints(0, 3)):
        a, b = s.x > 0, s.y > 0
        s.flag = select([a & b, a | b, a ^ b, ~a], which)  # and or xor not
        s.out = 0
        s.picked[r] = 0

    @action
    def choose(self, s, r: Request):
        s.out = If(s.x > s.y, s.x, s.y)  # ite
        s.flag = False
        s.picked[r] = 0

    @action
    def pages(self, s, r: Request):
        s.picked[r] = first(s.m[r], s.y) | without(page(s.x), s.m[r])  # first, compl (in without), bitand
        s.out = count(s.m[r]) * 10 + nth(s.m[r], s.y, -1)  # popcount nth
        s.flag = False

