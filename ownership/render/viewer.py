"""The counterexample viewer's terminal view (`ownership show TRACE`).

A trace is shown as a reviewer reads a post-mortem: first the summary (the violation in plain
words, and why: the spec's beliefs about the violating request set against the kernel's truth
about its pages), the timeline of who acted (router, prefill, transfer, decode) and what each
step did, and the violating step; then every step with the page grid of each pool (owner and
content of every page, marked: free, owned by the acting request, owned by another request,
holding another request's KV, write in flight) and its changes (issues 5 and 17).

Everything here reads only the Trace (named values, `Model.show`), never a spec, so a trace
from any engine, or an ITF file from another tool, is shown without executing anything. The
same view model (render/view_model.py, render/why.py) feeds the HTML page (render/html.py)
and the sequence diagram (render/mermaid.py). A view is a list of lines of (text, style) segments: plain text when
output is not a terminal, colour through rich when it is.
"""

from __future__ import annotations

import io
from typing import Any

from ..trace import Trace
from .escape import printable
from .states import KERNEL_KINDS, is_kernel_var
from .text import changes, show_value
from .view_model import (
    MARKS,
    STATUSES,
    PoolGrid,
    TraceView,
    build_view,
    check_step,
    effects,
    marks_of,
    page_grid,
    step_label,
    title_of,
)
from .why import Why


def _visible(text: str) -> str:
    """A segment of the terminal view, safe to print: a trace is untrusted, and an escape
    sequence written to a terminal can retitle it or clear it, a bidi override can hide text.
    Such characters are shown as escapes (render.escape.printable); a newline too, since a
    line of the view is one line on screen (a trace cannot forge lines of its own)."""
    return printable(text).replace("\n", "\\n")


Seg = tuple[str, str | None]
Line = list[Seg]


def _why_lines(why: Why) -> list[Line]:
    head, _, rest = why.heading.partition(": ")
    out: list[Line] = [[(f"{head}: ", "bold"), (rest, None)]]
    for k, line in enumerate(why.truth):
        out.append([("  truth    " if k == 0 else "           ", "dim"), (line, None)])
    shown = why.shown()
    width = max([len(b.text) for b in shown] or [0])
    for k, b in enumerate(shown):
        line: Line = [("  beliefs  " if k == 0 else "           ", "dim")]
        if b.reasons:
            line += [(f"{b.text:<{width}}", "bold yellow"), (f"  {'; '.join(b.reasons)}", None)]
        else:
            line.append((b.text, "dim"))
        out.append(line)
    if why.differs:
        out.append([("  differs  ", "dim"), (why.differs, "bold red")])
    return out


# --------------------------------------------------------------------------- terminal view


def _legend(trace: Trace) -> list[Line]:
    out: list[Line] = [[("Page marks: ", "bold")]]
    line: Line = [("  ", None)]
    for name, (sym, style, text) in marks_of(trace).items():
        if name == "free":
            text = "free"
        line += [(sym, style), (f" {text}", None)]
        if len("".join(t for t, _ in line)) > 60:
            out.append(line)
            line = [("  ", None)]
        else:
            line.append(("   ", None))
    if len(line) > 1:
        out.append(line)
    return out


def _grid_lines(grid: PoolGrid, width: int, indent: str) -> list[Line]:
    reader = f" (request in view: {grid.reader})" if grid.reader else ""
    out: list[Line] = [[(indent, None), (f"{grid.pool} pages{reader}:", "bold")]]
    label_w = 9
    widths = [max(len(str(c.shown)), len(c.owner), len(c.content), len(c.symbols)) + 2 for c in grid.cells]
    blocks: list[list[int]] = [[]]
    used = len(indent) + 2 + label_w
    for k, w in enumerate(widths):
        if blocks[-1] and used + w > width:
            blocks.append([])
            used = len(indent) + 2 + label_w
        blocks[-1].append(k)
        used += w
    pad = indent + "  "
    for block in blocks:
        rows: dict[str, Line] = {name: [(pad, None), (f"{name:<{label_w}}", "dim")]
                                 for name in ("page", "owner", "content", "marks")}
        for k in block:
            c, w = grid.cells[k], widths[k]
            own_style = MARKS[c.marks[0]][1] if c.marks else None
            content_style = "bold red" if "foreign" in c.marks else ("yellow" if "unwritten" in c.marks else None)
            rows["page"].append((f"{c.shown:<{w}}", "dim"))
            rows["owner"].append((f"{c.owner:<{w}}", own_style))
            rows["content"].append((f"{c.content:<{w}}", content_style))
            for m in c.marks:
                rows["marks"].append((MARKS[m][0], MARKS[m][1]))
            rows["marks"].append((" " * (w - len(c.symbols)), None))
        out.extend(rows.values())
    if grid.hidden:
        out.append([(pad, None), (f"... and {grid.hidden:,} more pages, free and unchanged at this step", "dim")])
    fl = grid.free_list_text()
    if fl is not None:
        out.append([(pad, None), ("free list ", "dim"), (fl, None)])
    return out


def _change_lines(trace: Trace, i: int, indent: str) -> list[Line]:
    if i == 0:
        return []
    diff = changes(trace.steps[i - 1].state, trace.steps[i].state)
    if trace.page_ids:  # a monitor's trace: the pages' own ids, not their positions
        diff = [(_page_element(trace, name), old, new) for name, old, new in diff]
    if not diff:
        return [[(indent, None), ("(no change)", "dim")]]
    return [[(indent, None), (f"{name}: ", None), (_short(show_value(old)), "dim"), (" -> ", "dim"),
             (_short(show_value(new)), "bold")] for name, old, new in diff]


def _page_element(trace: Trace, name: str) -> str:
    """`decode.owner[0]` as `decode.owner[page 9]` where position 0 is page 9."""
    pool, dot, rest = name.partition(".")
    kind, bracket, index = rest.partition("[")
    if not (dot and bracket and pool in trace.page_ids and index.rstrip("]").isdigit()):
        return name
    return f"{pool}.{kind}[page {trace.page_id(pool, int(index.rstrip(']')))}]"


def _short(text: str, limit: int = 200) -> str:
    """A value for a change line; a huge one (a free list of thousands of pages) cut short."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def _step_head(trace: Trace, i: int, narrative: list[str | None] | None = None) -> Line:
    step = trace.steps[i]
    v = trace.violation
    line: Line = [(f"Step {i}  ", "bold")]
    if step.actor:
        line.append((f"[{step.actor}] ", "cyan"))
    line.append((step_label(step), "bold"))
    story = narrative[i] if narrative is not None and i < len(narrative) else None
    if story:
        line += [("  ", None), (story, "italic")]
    if v is not None and v.step == i:
        line += [("  ", None), (f"<-- VIOLATION: {v.property}{_after(v)}", "bold white on red")]
    return line


def _explain_lines(trace: Trace, indent: str) -> list[Line]:
    v = trace.violation
    if v is None:
        return []
    out: list[Line] = [[(indent, None), (f"violated: {v.property}", "bold red")],
                       [(indent + "  ", None), (v.message, None)]]
    if v.also:
        out.append([(indent + "  ", None), (f"(also violated at this step: {', '.join(v.also)})", None)])
    return out


def _state_lines(trace: Trace, i: int, view: TraceView, indent: str) -> list[Line]:
    state = trace.steps[i].state
    before = trace.steps[i - 1].state if i else state
    out: list[Line] = []
    for var, value in state.items():
        if is_kernel_var(var, view.pools):
            continue
        changed = i > 0 and before.get(var) != value
        out.append([(indent, None), (f"{var}: ", None), (show_value(value), "bold" if changed else None)]
                   + ([("  (changed)", "dim")] if changed else []))
    return out


def _status_lines(view: TraceView, i: int, indent: str) -> list[Line]:
    if not view.properties:
        return []
    row = view.status[i]
    line: Line = [(indent, None), ("properties: ", "bold")]
    for k, prop in enumerate(view.properties):
        st = row[prop]
        word, style, _ = STATUSES[st.status]
        line += [(f"{prop} ", None), (word, style)]
        if k < len(view.properties) - 1:
            line.append(("; ", None))
    out = [line]
    for prop in view.properties:
        st = row[prop]
        if st.status == "hazard":
            out.append([(indent + "  ", None), (f"{prop} hazard: ", "yellow"), (st.note, None)])
    return out


def _timeline(trace: Trace, view: TraceView, narrative: list[str | None] | None = None) -> list[Line]:
    n = len(trace.steps) - 1
    out: list[Line] = [[(f"Timeline ({n} step{'s' if n != 1 else ''})", "bold")]]
    wn = max(4, len(str(n)))
    actors = [s.actor or "" for s in trace.steps]
    wa = max([5] + [len(a) for a in actors])
    labels = [step_label(s) for s in trace.steps]
    wl = min(40, max(len(x) for x in labels))
    told = narrative is not None and any(narrative)
    out.append([(f"    {'step':>{wn}}  {'actor':<{wa}}  {'action':<{wl}}  {'what happened' if told else 'pages'}", "dim")])
    v = trace.violation
    for i in range(len(trace.steps)):
        bad = v is not None and v.step == i
        line: Line = [("  > " if bad else "    ", "bold red" if bad else None),
                      (f"{i:>{wn}}  ", None), (f"{actors[i]:<{wa}}  ", "cyan"),
                      (f"{labels[i]:<{wl}}", "bold red" if bad else None)]
        what = (narrative[i] or "") if told and narrative is not None and i < len(narrative) else "; ".join(
            effects(trace, i, view.pools))
        if what:
            line.append((f"  {what}", None))
        if bad and v is not None:
            line.append((f"  <-- violation: {v.property}{_after(v)}", "bold white on red"))
        out.append(line)
    if view.loop is not None:
        out.append([("    ", None), (f"{'':>{wn}}  ", None), (f"... {view.loop}", "bold yellow")])
    return out


def _foreign_table(trace: Trace, width: int) -> list[Line]:
    """The variables of each step as a table: a row per variable, a column per step."""
    variables = trace.vars
    n = len(trace.steps)
    cells = [[show_value(step.state[var]) for step in trace.steps] for var in variables]
    changed = [[i > 0 and trace.steps[i - 1].state[var] != trace.steps[i].state[var] for i in range(n)]
               for var in variables]
    heads = [f"{i}" if trace.steps[i].action is None else f"{i} {trace.steps[i].action}" for i in range(n)]
    label_w = max([8] + [len(v) for v in variables])
    col_w = [max([len(heads[i])] + [len(cells[r][i]) + 2 for r in range(len(variables))]) + 2 for i in range(n)]
    blocks: list[list[int]] = [[]]
    used = 2 + label_w + 2
    for i in range(n):
        if blocks[-1] and used + col_w[i] > width:
            blocks.append([])
            used = 2 + label_w + 2
        blocks[-1].append(i)
        used += col_w[i]
    out: list[Line] = []
    for b, block in enumerate(blocks):
        if b:
            out.append([])
        out.append([("  ", None), (f"{'step':<{label_w}}  ", "dim")] + [(f"{heads[i]:<{col_w[i]}}", "bold") for i in block])
        for r, var in enumerate(variables):
            line: Line = [("  ", None), (f"{var:<{label_w}}  ", None)]
            for i in block:
                text = cells[r][i] + (" *" if changed[r][i] else "")
                line.append((f"{text:<{col_w[i]}}", "bold" if changed[r][i] else None))
            out.append(line)
    out.append([("  (* changed at this step)", "dim")])
    return out


def render_view(trace: Trace, *, step: int | None = None, diff: bool = False, width: int = 100,
                narrative: list[str | None] | None = None) -> list[Line]:
    """The terminal view of a trace as styled lines.

    Default: the summary first (the violation, why it happened, the timeline, the violating
    step with its changes, page grids and property status), then every step with its changes
    and the page grids of the pools it touched (all pools at step 0), and the reproduce
    command. `step`: that step alone, with its full state and property status. `diff`: only
    what changed at each step. `narrative`: a line per step in the protocol's words (the
    `#meta.narrative` of each state that `ownership check --out` writes), shown in the
    timeline and beside each step's action."""
    check_step(trace, step)
    view = build_view(trace, narrative)
    narrative = view.narrative
    out: list[Line] = [[(title_of(trace), "bold")]]
    v = trace.violation
    if trace.foreign:
        return out + [[]] + _foreign_view(trace, step=step, diff=diff, width=width)
    if v is not None:
        out.append([("violated: ", "bold red"), (v.property, "bold red"),
                    (f" after step {v.step}" if _after(v) else f" at step {v.step}", None)])
        out.append([("  ", None), (v.message, None)])
    else:
        out.append([("no violation recorded in this trace", None)])
    why = view.why
    if why is not None and (step is None or step == why.step):
        out.append([])
        out.extend(_why_lines(why))
    show_pools = bool(view.pools) and not diff
    if step is not None:
        if show_pools:
            out.append([])
            out.extend(_legend(trace))
        out.append([])
        out.extend(_step_detail(trace, view, step, narrative, width, full=not diff, alone=True))
    elif diff:
        for i in range(len(trace.steps)):
            out.append([])
            out.append(_step_head(trace, i, narrative))
            if i == 0:
                out.extend([("    ", None), (f"{var}: {show_value(value)}", None)]
                           for var, value in trace.steps[0].state.items())
            out.extend(_change_lines(trace, i, "    "))
            if v is not None and v.step == i:
                out.extend(_explain_lines(trace, "  "))
    else:
        out.append([])
        out.extend(_timeline(trace, view, narrative))
        if show_pools:
            out.append([])
            out.extend(_legend(trace))
        if v is not None:
            out.append([])
            out.append([(f"The violating step, {v.step}:", "bold")])
            out.extend(_step_detail(trace, view, v.step, narrative, width, full=True, alone=False))
            out.append([])
            out.append([("Every step:", "bold")])
        for i in range(len(trace.steps)):
            out.append([])
            if v is not None and v.step == i:
                out.append(_step_head(trace, i, narrative) + [("  (above)", "dim")])
                continue
            out.append(_step_head(trace, i, narrative))
            what = effects(trace, i, view.pools)
            if what and narrative is not None:  # (without narratives the timeline shows them)
                out.append([("  ", None), ("; ".join(what), "italic")])
            if i == 0:
                out.extend(_state_lines(trace, 0, view, "    "))
            out.extend(_change_lines(trace, i, "    "))
            touched = [p for p in view.pools if i == 0 or any(
                trace.steps[i - 1].state.get(f"{p}.{k}") != trace.steps[i].state.get(f"{p}.{k}")
                for k in KERNEL_KINDS)]
            for pool in touched:
                out.extend(_grid_lines(page_grid(trace, i, pool, compact=True), width, "  "))
    if trace.reproduce:
        out.append([])
        out.append([("Reproduce: ", "bold"), (trace.reproduce, None)])
    return out


def _step_detail(trace: Trace, view: TraceView, i: int, narrative: list[str | None] | None, width: int,
                 *, full: bool, alone: bool) -> list[Line]:
    """One step in detail: its head, what it did to the pages, its changes; with `full` the
    page grids (of every pool), and, `alone`, the spec's state; its property status and, at
    the violating step, the explanation."""
    v = trace.violation
    out: list[Line] = [_step_head(trace, i, narrative)]
    what = effects(trace, i, view.pools)
    if what:
        out.append([("  ", None), ("; ".join(what), "italic")])
    out.extend(_change_lines(trace, i, "    "))
    if not full:
        return out
    for pool in view.pools:
        out.extend(_grid_lines(page_grid(trace, i, pool, compact=True), width, "  "))
    if alone:
        state = _state_lines(trace, i, view, "    ")
        if state:
            out.append([("  ", None), ("beliefs (spec state):", "bold")])
            out.extend(state)
    if alone or (v is not None and v.step == i):
        out.extend(_status_lines(view, i, "  "))
    if v is not None and v.step == i:
        out.extend(_explain_lines(trace, "  "))
    return out


def _foreign_view(trace: Trace, *, step: int | None, diff: bool, width: int) -> list[Line]:
    if step is not None:
        head: Line = [(f"Step {step}  ", "bold"), (step_label(trace.steps[step]), "bold")]
        if diff:
            return [head] + _change_lines(trace, step, "    ")
        before = trace.steps[step - 1].state if step else None
        w = max([8] + [len(v) for v in trace.vars])
        rows: list[Line] = [head]
        for var, value in trace.steps[step].state.items():
            changed = before is not None and before.get(var) != value
            rows.append([("  ", None), (f"{var:<{w}}  ", None), (show_value(value), "bold" if changed else None)]
                        + ([("  *", "dim")] if changed else []))
        return rows
    if diff:
        out: list[Line] = []
        for i in range(len(trace.steps)):
            if i:
                out.append([])
            out.append([(f"Step {i}  ", "bold"), (step_label(trace.steps[i]), "bold")])
            if i == 0:
                out.extend([("    ", None), (f"{var}: {show_value(value)}", None)]
                           for var, value in trace.steps[0].state.items())
            out.extend(_change_lines(trace, i, "    "))
        return out
    return _foreign_table(trace, width)


def to_plain(lines: list[Line]) -> str:
    """The view as plain text (no escape codes, trace text escaped); trailing spaces trimmed."""
    return "\n".join("".join(_visible(text) for text, _ in line).rstrip() for line in lines)


def to_ansi(lines: list[Line]) -> str:
    """The view with colour, through rich. Each segment is escaped first, then appended to a
    rich Text object with our own style: trace text is never read as rich markup (a request
    named "[bold red]x" shows those characters) and carries no control character."""
    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system="standard", width=10_000,
                      highlight=False, soft_wrap=True, emoji=False)
    for line in lines:
        text = Text()
        for chunk, style in line:
            text.append(_visible(chunk), style=style or "")
        text.rstrip()
        console.print(text)
    return buf.getvalue().rstrip("\n")


def render_show(trace: Trace, *, step: int | None = None, diff: bool = False,
                color: bool = False, width: int = 100, narrative: list[str | None] | None = None) -> str:
    """`ownership show TRACE`: the terminal view, plain or coloured."""
    lines = render_view(trace, step=step, diff=diff, width=width, narrative=narrative)
    return to_ansi(lines) if color else to_plain(lines)


def _after(v: Any) -> str:
    """A log's divergence from a spec (ownership monitor --spec) is found after the trace's last
    step: the log's next action, refused by the spec, is not a step of it."""
    return " after this step" if v.property == "diverged" else ""
