"""The built-in properties of the bug class, by name: what the ownership kernel judges.

The kernel (ownership.kernel) flags these; the language needs their names to refuse a spec
property of the same name, to list and skip properties, and to order a report. They live
here, on the language's floor, so that the language never imports the kernel, which is
written in it (docs/adr/0005-the-kernel-stands-on-the-language.md).
"""

from __future__ import annotations

STALE_READ = "stale-read"
READ_UNOWNED = "read-unowned"
WRITE_UNOWNED = "write-unowned"
FREE_IN_FLIGHT = "free-in-flight"
DOUBLE_FREE = "double-free"
FREE_PINNED = "free-pinned"
COUNT_BELOW_ZERO = "count-below-zero"
CRASH = "crash"
LEAK = "leak"

#: The built-in properties, in the order a report lists them, with when each is violated.
PROPERTIES: dict[str, str] = {
    STALE_READ: "a read covers a page whose content is not the reader's: another request's KV (a cross-request leak) or never written",
    READ_UNOWNED: "a read covers a page that the reader does not own",
    WRITE_UNOWNED: "a write or a landing transfer hits a page that the writer does not own (freed and reused meanwhile)",
    FREE_IN_FLIGHT: "a page is freed while a transfer into or out of it is in flight (too-early free)",
    DOUBLE_FREE: "a page is freed that is free already, or owned by another request",
    FREE_PINNED: "a page loses its last reference while it is pinned (evicted or freed under a pin); only in specs with a pool with pins",
    COUNT_BELOW_ZERO: "a holder drops a reference nobody holds, or a pin it does not have: a reference count goes below zero; only in specs with a counted pool or pins",
    CRASH: "a step makes the engine's own code fail (an exception, an assertion: `s.crash` in a spec), and with its process every request on it; only in specs that model one",
    LEAK: "a finished request still owns a page (it was never returned to the pool)",
}

EVENTUALLY_RELEASED = "eventually-released"
EVENTUALLY_LANDED = "eventually-landed"

#: The kernel's liveness properties, which a spec switches on by name (`liveness = (...)` in
#: its class body): each is checked for every page of every pool.
LIVENESS: dict[str, str] = {
    EVENTUALLY_RELEASED: "a page that is owned is, on every behaviour, free again later (pages come back to the pool)",
    EVENTUALLY_LANDED: "a transfer into a page that is in flight lands later, on every behaviour (no transfer stays in flight forever)",
}

#: The kernel's operations on the state `s` of an action (ownership.kernel.KernelOperations):
#: a slot must not take one of these names, or `s.<name>` would not reach it.
OPERATIONS = ("alloc", "free", "write", "read", "take", "share", "pin", "unpin", "holds", "references", "pinned_pages",
              "send", "land", "owned", "free_pages", "in_flight", "reused", "written")

__all__ = ["COUNT_BELOW_ZERO", "CRASH", "DOUBLE_FREE", "FREE_PINNED", "EVENTUALLY_LANDED", "EVENTUALLY_RELEASED", "FREE_IN_FLIGHT", "LEAK", "LIVENESS",
           "OPERATIONS", "PROPERTIES", "READ_UNOWNED", "STALE_READ", "WRITE_UNOWNED"]
