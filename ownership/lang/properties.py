"""The built-in properties of the bug class, by name: what the ownership kernel judges.

The kernel (ownership.kernel) flags these; the language needs their names to refuse a spec
property of the same name, to list and skip properties, and to order a report. They live
here, on the language's floor, so that the language never imports the kernel, which is
written in it (docs/adr/0005-the-kernel-stands-on-the-language.md).

It is also the one place that words them (issue 30, item 3; NOTE(one-voice)): when each is
violated, its message, the hazard and what it names. Nothing here prints; the code that shows
a property (traces/messages.py, bridges/monitor.py, render/) fills these words in with its own data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STALE_READ = "stale-read"
READ_UNOWNED = "read-unowned"
WRITE_UNOWNED = "write-unowned"
FREE_IN_FLIGHT = "free-in-flight"
DOUBLE_FREE = "double-free"
FREE_PINNED = "free-pinned"
COUNT_BELOW_ZERO = "count-below-zero"
CRASH = "crash"
LEAK = "leak"

ALLOC_HELD = "alloc-held"


@dataclass(frozen=True)
class Property:
    """How one built-in property is worded, wherever it is shown (issue 30, item 3).

    NOTE(one-voice): this table is the one place that words a property. Traces
    (ownership/traces/messages.py), the monitor (ownership/bridges/monitor.py), `ownership list`
    (render/text.py) and both viewers (render/view_model.py and viewer.py, render/html.py) fill its templates
    with their data and add no words of their own about a property;
    tests/language/test_property_wording.py holds them to it.
    """

    name: str
    #: when it is violated, in one line (`ownership list`, the viewers' property table)
    when: str
    #: the violation in one sentence after "step N, action: ": a str.format template over
    #: `names` and {hazard}
    message: str
    #: what goes wrong in a real engine; the end of the messages whose template has {hazard}
    hazard: str
    #: what a violation names: the fields of `message` and `parts` (see NAMES)
    names: tuple[str, ...]
    #: other fragments of its messages, by case (templates over `names` too)
    parts: dict[str, str] = field(default_factory=dict)
    #: checked in every spec; False: only in a spec that models it (Model.models)
    always: bool = True
    #: a log of page events shows it, so `ownership monitor` checks it
    monitored: bool = True
    #: the viewers' note when the pages are set up for it, not violated (a "hazard" status)
    setup: str = ""

    def say(self, *, hazard: str | None = None, **names: str) -> str:
        """The message, its fields filled in (`hazard`: one of `parts` instead of the hazard)."""
        return self.message.format(hazard=self.hazard if hazard is None else hazard, **names)

    def part(self, case: str, **names: str) -> str:
        """One of its other fragments, its fields filled in."""
        return self.parts[case].format(**names)


#: What a property's templates may name (Property.names), in words.
NAMES: dict[str, str] = {
    "who": "the one that acted: `request r1`, or an owner that is not a request (`owner cache`)",
    "request": "the acting request's name",
    "pages": "the pages, led by their pool and with what they held",
    "whose": "whose KV the reader expected",
    "own": "what the actor lacks: `own`, `hold`, `hold alone`",
    "holders": "who holds the pages instead",
    "detail": "what follows the pages: who holds them instead, or what the write destroys (one of `parts`)",
    "others": "the requests whose KV is overwritten",
    "when": "the steps at which the page was freed",
    "transfer": "whose transfer is in flight",
    "what": "what failed (the spec's words)",
}

_STALE = Property(
    STALE_READ,
    when="a read covers a page whose content is not the reader's: another request's KV (a cross-request leak) or never written",
    message="request {request} read {pages}, not {whose}: {hazard}.",
    hazard="a cross-request leak",
    names=("request", "pages", "whose"),
    parts={"unwritten": "it attends over data never written for it"},
    setup="a read by the owner now would be stale",
)
_READ_UNOWNED = Property(
    READ_UNOWNED,
    when="a read covers a page that the reader does not own",
    message="request {request} read {pages}, which it does not {own}{detail}.",
    hazard="the reader attends over KV that is not its own, or no longer its own",
    names=("request", "pages", "own", "detail", "holders"),
    parts={"held": " ({holders} does)", "free": " (free)"},
)
_WRITE_UNOWNED = Property(
    WRITE_UNOWNED,
    when="a write or a landing transfer hits a page that the writer does not own (freed and reused meanwhile)",
    message="request {request} wrote {pages}, which it does not {own}{detail}.",
    hazard="the KV of the request that holds the page now is overwritten",
    names=("request", "pages", "own", "detail", "others", "when"),
    parts={
        "held": ": the KV of {others} is overwritten",
        "free": " (a free page: its next owner's KV will be overwritten)",
        "reused": ": it was freed and reused meanwhile{when}, so the KV of {others} is overwritten",
        "freed": ": it was freed meanwhile{when}, and the next owner's KV will be overwritten",
        "never": ": it never held the page, so the KV of {others} is overwritten",
        "never-given": ": it never held the page (a write into a page it was never given)",
    },
    setup="the landing would overwrite a page its sender does not own",
)
_FREE_IN_FLIGHT = Property(
    FREE_IN_FLIGHT,
    when="a page is freed while a transfer into or out of it is in flight (too-early free)",
    message="{who} freed {pages} while a transfer{transfer} into or out of it was still in flight: {hazard}.",
    hazard="the write can land after the page is reused",
    names=("who", "pages", "transfer"),
)
_DOUBLE_FREE = Property(
    DOUBLE_FREE,
    when="a page is freed that is free already, or owned by another request",
    message="{who} freed {pages}: {hazard}.",
    hazard="the page can end up with two owners",
    names=("who", "pages", "holders"),
    parts={"held": "{pages}, which it does not hold ({holders} does)",
           "free": "{pages}, which it does not hold (already free)",
           "taken": "a real reference count takes the reference from another holder ({holders}), reaches zero"
                    " early and frees the page while it is still in use"},
)
_FREE_PINNED = Property(
    FREE_PINNED,
    when="a page loses its last reference while it is pinned (evicted or freed under a pin); only in specs with a pool with pins",
    message="{who} dropped the last reference to {pages}: {hazard}.",
    hazard="the page is free and can be handed out again while a holder still has it pinned",
    names=("who", "pages"),
    always=False,
    monitored=False,
)
_COUNT_BELOW_ZERO = Property(
    COUNT_BELOW_ZERO,
    when="a holder drops a reference nobody holds, or a pin it does not have: a reference count goes below zero; only in specs with a counted pool or pins",
    message="{who} {what}: {hazard}.",
    hazard="a reference count goes below zero (a real counter wraps, or takes another holder's reference with it)",
    names=("who", "what", "pages"),
    parts={
        "reference": "dropped a reference to {pages}, which nobody holds (already free)",
        "pin": "dropped a pin of {pages} that it does not have",
    },
    always=False,
    monitored=False,
)
_CRASH = Property(
    CRASH,
    when="a step makes the engine's own code fail (an exception, an assertion: `s.crash` in a spec), and with its process every request on it; only in specs that model one",
    message="the engine's own code fails: {what}. The process dies, and with it every request on it (a crash or an"
            " assertion of the engine, where the protocol let this step happen).",
    hazard="the process dies, and with it every request on it",
    names=("what",),
    always=False,
    monitored=False,
)
_LEAK = Property(
    LEAK,
    when="a finished request still owns a page (it was never returned to the pool)",
    message="a finished request keeps pages that never return to the pool: {pages}.",
    hazard="its pages never return to the pool, which runs out of pages for others",
    names=("pages", "request"),
    parts={"left": "request {request} left the node still holding {pages}: they never return to the pool."},
)

#: The built-in properties, in the order a report lists them (the first of several violated
#: at one step is the one reported): the one table of their words, NOTE(one-voice).
PROPERTIES: dict[str, Property] = {p.name: p for p in (
    _STALE, _READ_UNOWNED, _WRITE_UNOWNED, _FREE_IN_FLIGHT, _DOUBLE_FREE, _FREE_PINNED, _COUNT_BELOW_ZERO, _CRASH, _LEAK)}

#: The monitor's own property: a log can show an allocator handing out a held page (a model's
#: alloc takes free pages only, so no spec has it).
MONITOR_ONLY: dict[str, Property] = {ALLOC_HELD: Property(
    ALLOC_HELD,
    when="an allocator hands out a page that a request still holds (the monitor's own check)",
    message="the allocator gave request {request} {pages}, which {holders} still holds: {hazard}.",
    hazard="a page with two owners (a free that went wrong earlier)",
    names=("request", "pages", "holders"),
)}

#: What `ownership monitor` checks, in the order it reports them: the kernel's properties
#: that a log of page events shows, then its own.
MONITORED: tuple[str, ...] = (*(n for n, p in PROPERTIES.items() if p.monitored), *MONITOR_ONLY)

EVENTUALLY_RELEASED = "eventually-released"
EVENTUALLY_LANDED = "eventually-landed"

#: The kernel's liveness properties, which a spec switches on by name (`liveness = (...)` in
#: its class body): each is checked for every page of every pool.
LIVENESS: dict[str, str] = {
    EVENTUALLY_RELEASED: "a page that is owned is, on every behaviour, free again later (pages come back to the pool)",
    EVENTUALLY_LANDED: "a transfer into a page that is in flight lands later, on every behaviour (no transfer stays in flight forever)",
}

#: The kernel's operations on the state `s` of an action (ownership.kernel.KernelOperations):
#: a slot must not take one of these names, or `s.<name>` would not reach it. Frozen
#: (NOTE(kernel-namespace) in ownership.lang.state): an operation added later is reached as
#: `s.kernel.<name>` only, and is not added here, so that no spec's slot name is ever taken.
OPERATIONS = ("alloc", "free", "write", "read", "take", "share", "pin", "unpin", "holds", "references", "pinned_pages",
              "send", "land", "owned", "free_pages", "in_flight", "reused", "written")

#: The kernel's operations added since OPERATIONS was frozen: reached as `s.kernel.<name>`
#: only (each a method `_kernel_<name>` of ownership.kernel.KernelOperations), never as
#: `s.<name>`, so a slot of that name keeps working (NOTE(kernel-namespace)).
KERNEL_ONLY: tuple[str, ...] = ("fail",)

__all__ = ["ALLOC_HELD", "COUNT_BELOW_ZERO", "CRASH", "DOUBLE_FREE", "FREE_PINNED", "EVENTUALLY_LANDED", "EVENTUALLY_RELEASED", "FREE_IN_FLIGHT", "LEAK", "LIVENESS",
           "KERNEL_ONLY", "MONITORED", "MONITOR_ONLY", "NAMES", "OPERATIONS", "PROPERTIES", "Property", "READ_UNOWNED", "STALE_READ", "WRITE_UNOWNED"]
