"""Pins: every kernel operation refuses every bad argument with a spec error at the spec's line.

`case` chooses the one call that the action `go` makes (the `# case N` comment marks its
line); tests/language/test_kernel_mutants.py expects, for each case, a SpecError with the operation's
message and this file and line, or no error at all. Cases 1-12 name a pool the spec does not
declare, 13-23 a request outside 1..requests, 24-31 pages outside the pool, 32-37 a bad key,
38-49 and 54-58 the other misuses (a pool of the wrong kind, a page number, a negative
count, a value of the wrong sort: an int where a page set is meant, a condition where an int
is, a list as a pool name), 59 a misspelt pool (the message suggests the right one), 60-61 a page number that is a
condition or negative; 62 allocates no page, which is no error. Every
case of 1-49 and 54-61 whose value is known when tracing is refused at load, before any step. Cases 50-53 take the value from the state instead, so the check is
made while searching, where `pick` stored it: `value` is a request id (50), a page (51), a
key (52) or a page count (53) chosen by `pick` in lo..hi; with values inside the bounds
these cases flag nothing, so a check that wrongly fires shows as a spec error.
"""

from ownership import Request, Spec, action, ints, page, param, per_request, pool, state


class BadArguments(Spec):
    requests = param(2, "requests")
    case = param(0, "which call `go` makes")
    lo = param(1, "the least value `pick` stores", minimum=-1)
    hi = param(1, "the largest value `pick` stores", minimum=-1)

    kv = pool(2)
    keyed = pool(2, keys=2)
    shared = pool(2, shared=True)
    lifo = pool(2, order="lifo")
    big = pool(4)
    table = per_request(kv)
    value = state(ints(-1, 4), 0)
    picked = state(bool, False)

    @action
    def pick(self, s, v: ints(lo, hi)):
        s.require(~s.picked)
        s.value = v
        s.picked = True

    @action
    def go(self, s, r: Request):
        s.require(s.picked)
        c = self.case
        if c == 1:
            s.holds("nope", 0, r)  # case 1
        if c == 2:
            s.owned("nope", r)  # case 2
        if c == 3:
            s.free_pages("nope")  # case 3
        if c == 4:
            s.reused("nope")  # case 4
        if c == 5:
            s.alloc("nope", r, 1)  # case 5
        if c == 6:
            s.take("nope", r, page(0))  # case 6
        if c == 7:
            s.share("nope", r, page(0))  # case 7
        if c == 8:
            s.free("nope", r, page(0))  # case 8
        if c == 9:
            s.write("nope", r, page(0))  # case 9
        if c == 10:
            s.read("nope", r, page(0))  # case 10
        if c == 11:
            s.send(r, "nope", page(0), "kv", page(1))  # case 11
        if c == 12:
            s.send(r, "kv", page(0), "nope", page(1))  # case 12
        if c == 13:
            s.holds("kv", 0, 3)  # case 13
        if c == 14:
            s.owned("kv", 3)  # case 14
        if c == 15:
            s.in_flight(3)  # case 15
        if c == 16:
            s.alloc("kv", 3, 1)  # case 16
        if c == 17:
            s.take("kv", 3, page(0))  # case 17
        if c == 18:
            s.share("shared", 3, page(0))  # case 18
        if c == 19:
            s.free("kv", 3, page(0))  # case 19
        if c == 20:
            s.write("kv", 3, page(0))  # case 20
        if c == 21:
            s.read("kv", 3, page(0))  # case 21
        if c == 22:
            s.send(3, "kv", page(0), "kv", page(1))  # case 22
        if c == 23:
            s.land(0)  # case 23
        if c == 24:
            s.take("kv", r, page(2))  # case 24
        if c == 25:
            s.share("shared", r, page(3))  # case 25
        if c == 26:
            s.free("kv", r, page(2) | page(3))  # case 26
        if c == 27:
            s.write("kv", r, page(2))  # case 27
        if c == 28:
            s.read("kv", r, page(2))  # case 28
        if c == 29:
            s.send(r, "kv", page(2), "kv", page(1))  # case 29
        if c == 30:
            s.send(r, "kv", page(0), "kv", page(2))  # case 30
        if c == 31:
            s.write("kv", r, page(0) | page(1))  # case 31 (inside the pool: no error)
        if c == 32:
            s.write("kv", r, page(0), key=1)  # case 32
        if c == 33:
            s.write("keyed", r, page(0))  # case 33
        if c == 34:
            s.write("keyed", r, page(0), key=3)  # case 34
        if c == 35:
            s.read("keyed", r, page(0), key=0)  # case 35
        if c == 36:
            s.read("kv", r, page(0), key=2)  # case 36
        if c == 37:
            s.read("keyed", r, page(0))  # case 37
        if c == 38:
            s.share("kv", r, page(0))  # case 38
        if c == 39:
            s.take("lifo", r, page(0))  # case 39
        if c == 40:
            s.reused("keyed")  # case 40
        if c == 41:
            s.send(r, "keyed", page(0), "kv", page(1))  # case 41
        if c == 42:
            s.send(r, "kv", page(0), "keyed", page(1))  # case 42
        if c == 43:
            s.holds("kv", 2, r)  # case 43
        if c == 44:
            s.alloc("kv", r, -1)  # case 44
        if c == 45:
            s.free("kv", r, 1)  # case 45
        if c == 46:
            s.holds("kv", s.value, r)  # case 46
        if c == 47:
            s.alloc("kv", r, s.table[r])  # case 47
        if c == 48:
            s.write("kv", s.picked, page(0))  # case 48
        if c == 49:
            s.write("keyed", r, page(0), key=s.picked)  # case 49
        if c == 50:
            s.owned("kv", s.value)  # case 50
        if c == 51:
            s.take("kv", r, page(s.value))  # case 51
        if c == 52:
            s.require(s.owned("keyed", r) == 0)
            got = s.alloc("keyed", r, 1)
            s.write("keyed", r, got, key=s.value)  # case 52
        if c == 53:
            s.alloc("kv", r, s.value)  # case 53
        if c == 54:
            s.free_pages(["kv"])  # case 54
        if c == 55:
            s.write("kv", True, page(0))  # case 55
        if c == 56:
            s.read("keyed", r, page(0), key=True)  # case 56
        if c == 57:
            s.alloc("kv", r, True)  # case 57
        if c == 58:
            s.take("kv", r, True)  # case 58
        if c == 59:
            s.alloc("keyd", r, 1)  # case 59 (a slip for keyed)
        if c == 60:
            s.holds("kv", True, r)  # case 60
        if c == 61:
            s.holds("kv", -1, r)  # case 61
        if c == 62:
            s.alloc("kv", r, 0)  # case 62 (no page: no error)
