"""A trace as a Mermaid sequence diagram (`ownership show TRACE --mermaid`), for design documents.

Participants are the trace's actors in swimlane order (router, prefill, transfer, decode).
Each step is a message: from the actor that last acted for the same request to the actor
acting now (a handoff), or from an actor to itself. The violating step ends in a cross and
carries a note; a lasso's loop ("steps i..j repeat forever") and the explanation close the
diagram.

Trace text is untrusted and Mermaid has its own syntax: in a message `;` ends the statement
(a syntax error), `#` cuts the text short, `%%` opens a comment, and `<`, `>`, `&` may be read
as HTML depending on the renderer's settings. Mermaid's entity codes (`#59;`) are not decoded
in sequence diagrams by Mermaid 11, so each such character is written as a Unicode look-alike
(`;` as `；`, `<` as `‹`): lossy, but readable and inert. A newline would end the statement:
it is shown as `＼n`. Characters that a terminal or a text editor would obey (escape
sequences, bidi overrides) are first shown as escapes by render.escape.printable, like
every text from a trace that reaches a terminal (`＼x1b`, `＼u202e`, with the look-alike of
the backslash), and a tab becomes a space.
Checked by rendering the output with Mermaid 11.17 in Chromium (docs/viewer.md).
"""

from __future__ import annotations

import re

from ..trace import Trace
from .escape import printable
from .states import acting_request
from .view_model import build_view, effects, lane_of, step_label

#: ASCII characters that mean something to Mermaid or HTML, and what is written instead.
LOOK_ALIKES: dict[str, str] = {
    ";": "\uff1b", "#": "\uff03", "%": "\uff05", "<": "\u2039", ">": "\u203a", "&": "\uff06",
    '"': "\u201d", "`": "\u02cb", "\\": "\uff3c",
}
_UNSAFE = re.compile("[" + re.escape("".join(LOOK_ALIKES)) + r"\x00-\x1f\x7f-\x9f\u2028\u2029" + "]")
_NAME = re.compile(r"[^A-Za-z0-9_.\-]")


def mermaid_text(text: str) -> str:
    """Text safe inside a Mermaid message or note, on one line: control and format characters
    become escapes, special characters look-alikes."""
    text = printable(text).replace("\n", "\\n")
    return _UNSAFE.sub(lambda m: LOOK_ALIKES.get(m.group(), " "), text)


def render_mermaid(trace: Trace) -> str:
    """The trace as a `sequenceDiagram` block (without the surrounding ``` fence)."""
    view = build_view(trace)
    lanes = view.lanes or [lane_of(s) for s in trace.steps[1:2]] or ["system"]
    ids = {lane: f"A{k}" for k, lane in enumerate(lanes)}
    lines = ["sequenceDiagram"]
    for lane in lanes:
        lines.append(f"    participant {ids[lane]} as {_NAME.sub('_', lane) or '_'}")
    first, last_lane = ids[lanes[0]], ids[lanes[-1]]
    span = first if first == last_lane else f"{first},{last_lane}"
    v = trace.violation
    lines.append(f"    Note over {span}: {mermaid_text(_headline(trace))}")
    previous: dict[str, str] = {}
    for i, step in enumerate(trace.steps):
        if i == 0:
            continue
        lane = lane_of(step)
        r = acting_request(step)
        src = previous.get(r, lane) if r is not None else lane
        if r is not None:
            previous[r] = lane
        what = " / ".join(effects(trace, i, view.pools))
        text = f"{i}. {step_label(step)}" + (f": {what}" if what else "")
        arrow = "-x" if v is not None and v.step == i else "->>"
        lines.append(f"    {ids.get(src, ids[lane])}{arrow}{ids[lane]}: {mermaid_text(text)}")
        if v is not None and v.step == i:
            lines.append(f"    Note over {ids[lane]}: {mermaid_text('violated: ' + v.property)}")
    loop, last = trace.loop, len(trace.steps) - 1
    if loop is not None and loop < last:  # a lasso (issue 13): where the run goes round forever
        lines.append(f"    Note over {span}: {mermaid_text(f'step {last} is the state of step {loop}: steps {loop + 1}..{last} repeat forever')}")
    elif loop is not None:
        lines.append(f"    Note over {span}: {mermaid_text(f'the run stops at step {last}, no action enabled, and stays there forever')}")
    if v is not None:
        lines.append(f"    Note over {span}: {mermaid_text(v.message)}")
    return "\n".join(lines)


def _headline(trace: Trace) -> str:
    if trace.foreign:
        return f"ITF trace, {len(trace.steps) - 1} steps"
    name = trace.spec_class or "trace"
    fixes = ", ".join(trace.fixes) if trace.fixes else "none"
    return f"{name}: fixes {fixes}"
