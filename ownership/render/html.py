"""The counterexample viewer as ONE self-contained HTML page (`ownership show TRACE --html F`).

The page works offline and makes no network request: its CSS and JavaScript are inline, it
uses the system's fonts, and a Content-Security-Policy (`default-src 'none'`, the inline
script and style allowed by their hashes) forbids any load. It shows swimlanes for the actors
(router, prefill, transfer, decode) with the handoffs between them, the page grid of every
pool, a step slider with left/right keyboard navigation, the status of each property at each
step, the violation explained and the reproduce command; and what the terminal tells (one
view model computes it for both): each step's narrative in the protocol's words, the why of
the violation, and a lasso whole, its loop marked (the steps that repeat forever, or the
dead end where the run stops).

A trace is untrusted input. Nothing from it is written into the markup: the view model is
embedded as JSON in a `<script type="application/json">` whose `<`, `>` and `&` are escaped
as \\u003c, \\u003e, \\u0026, and the script builds the page with `textContent` and
`createElement`, never `innerHTML`, so a request named `<script>alert(1)</script>` shows as
text (tests/traces/test_viewer_browser.py opens the page in headless Chromium to prove it). Every
string of the view model is passed through render.escape.printable first, as on the
terminal: a bidi override (U+202E) or a control character from a trace shows as `\u202e`,
it cannot reorder or hide the text around it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from ..trace import Trace
from .escape import printable
from .states import is_kernel_var
from .text import show_value
from .view_model import (
    STATUSES,
    arg_text,
    build_view,
    check_step,
    effects,
    lane_of,
    marks_of,
    page_grid,
    step_label,
    title_of,
)


def view_model(trace: Trace, *, start: int | None = None, narrative: list[str | None] | None = None) -> dict[str, Any]:
    """The data the page renders: plain JSON, every value already shown as text. `narrative`:
    each step's line in the protocol's words, as the terminal view takes it (cli/show.py
    `narratives`); the why and the lasso's words come from the view model, as the terminal's do."""
    from .text import changes

    check_step(trace, start)
    view = build_view(trace, narrative)
    why = view.why
    v = trace.violation
    if start is None:
        start = v.step if v is not None and 0 <= v.step < len(trace.steps) else 0
    steps = []
    for i, step in enumerate(trace.steps):
        diff = changes(trace.steps[i - 1].state, step.state) if i else []
        changed_vars = {var for var in step.state if i and trace.steps[i - 1].state.get(var) != step.state[var]}
        beliefs = [[var, show_value(value), var in changed_vars] for var, value in step.state.items()
                   if not is_kernel_var(var, view.pools)]
        pools = []
        for pool in view.pools:
            grid = page_grid(trace, i, pool, compact=True)
            pools.append({
                "name": pool,
                "reader": grid.reader,
                "hidden": grid.hidden,
                "free_list": grid.free_list_text(64),
                "cells": [{"page": c.shown, "owner": c.owner, "content": c.content,
                           "inflight": c.inflight, "outbound": c.outbound, "marks": list(c.marks)}
                          for c in grid.cells],
            })
        steps.append({
            "index": i,
            "label": step_label(step),
            "narrative": view.narrative[i] if view.narrative is not None else None,
            "action": step.action,
            "args": [[str(k), arg_text(x)] for k, x in step.args.items()],
            "actor": step.actor,
            "lane": lane_of(step),
            "effects": effects(trace, i, view.pools),
            "changes": [[name, show_value(old), show_value(new)] for name, old, new in diff],
            "beliefs": beliefs,
            "pools": pools,
            "status": {p: [s.status, s.note] for p, s in view.status[i].items()},
        })
    return {
        "title": title_of(trace),
        "spec_class": trace.spec_class,
        "foreign": trace.foreign,
        "reproduce": trace.reproduce,
        "start": start,
        "loop": trace.loop if view.loop is not None else None,
        "loop_note": view.loop,
        "why": None if why is None else {
            "step": why.step, "heading": why.heading, "truth": list(why.truth),
            "beliefs": [[b.text, "; ".join(b.reasons)] for b in why.shown()],
            "differs": why.differs,
        },
        "violation": None if v is None else {
            "property": v.property, "step": v.step, "message": v.message,
            "also": list(v.also), "requests": list(v.requests),
            "pages": [[pool, trace.page_id(pool, p)] for pool, p in v.pages],
        },
        "lanes": view.lanes,
        "messages": [{"from": m.source_step, "to": m.step, "src": m.src, "dst": m.dst, "request": m.request}
                     for m in view.messages],
        "properties": view.properties,
        "about": view.about,
        "marks": [[name, sym, text] for name, (sym, _, text) in marks_of(trace).items()],
        "statuses": [[name, word, text] for name, (word, _, text) in STATUSES.items()],
        "steps": steps,
    }


def _printable(data: Any) -> Any:
    """The view model with every string (keys too) escaped by render.escape.printable."""
    if isinstance(data, str):
        return printable(data)
    if isinstance(data, dict):
        return {_printable(k): _printable(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_printable(v) for v in data]
    return data


def embed_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no `<`, `>` or `&` can end or open a tag."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render_html(trace: Trace, *, start: int | None = None, narrative: list[str | None] | None = None) -> str:
    """The whole page: markup without trace data, the data as escaped JSON, inline CSS and JS."""
    data = embed_json(_printable(view_model(trace, start=start, narrative=narrative)))
    csp = (f"default-src 'none'; script-src '{_sha256(_SCRIPT)}'; style-src '{_sha256(_STYLE)}';"
           " img-src data:; base-uri 'none'; form-action 'none'")
    return (_PAGE.replace("@CSP@", csp).replace("@STYLE@", _STYLE)
            .replace("@SCRIPT@", _SCRIPT).replace("@DATA@", data))


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="@CSP@">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>ownership trace</title>
<style>@STYLE@</style>
</head>
<body>
<header>
  <h1 id="title">ownership trace</h1>
  <div id="verdict"></div>
  <section id="why" hidden></section>
</header>
<noscript><p>This page needs JavaScript to show the trace (it is embedded in the page as JSON).</p></noscript>
<nav id="controls" aria-label="steps">
  <button id="prev" type="button" title="previous step (left arrow)">&#9664;</button>
  <input id="slider" type="range" min="0" max="0" value="0" step="1" aria-label="step">
  <button id="next" type="button" title="next step (right arrow)">&#9654;</button>
  <span id="counter"></span>
  <button id="goto-violation" type="button" hidden>go to the violation</button>
  <span class="hint">&larr; / &rarr; keys move between steps</span>
</nav>
<section id="lanes-box" aria-label="timeline"><div id="lane-names"></div><div id="lanes"></div></section>
<main>
  <section id="step-box">
    <h2 id="step-title"></h2>
    <p id="step-narrative" hidden></p>
    <div id="step-loop" hidden></div>
    <div id="step-violation"></div>
    <ul id="effects"></ul>
    <div id="pools"></div>
    <div id="legend"></div>
    <h3>Changes</h3>
    <ul id="changes"></ul>
  </section>
  <section id="side">
    <h3 id="props-title">Properties at each step</h3>
    <div id="props"></div>
    <div id="props-notes"></div>
    <h3 id="beliefs-title">Beliefs (spec state)</h3>
    <table id="beliefs"></table>
  </section>
</main>
<footer>
  <h3>Reproduce</h3>
  <pre id="reproduce"></pre>
</footer>
<script type="application/json" id="trace-data">@DATA@</script>
<script>@SCRIPT@</script>
</body>
</html>
"""

_STYLE = """
:root { --red: #c62828; --green: #2e7d32; --purple: #6a1b9a; --cyan: #00838f; --amber: #b26a00;
  --grey: #757575; --bg: #fafafa; --line: #d0d0d0; }
* { box-sizing: border-box; }
body { margin: 0; padding: 12px 20px; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
  background: var(--bg); color: #212121; }
h1 { font-size: 18px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 0 0 6px; }
h3 { font-size: 13px; margin: 12px 0 4px; text-transform: uppercase; letter-spacing: .04em; color: #555; }
code, pre, .mono, svg text { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
#verdict { margin: 4px 0 8px; }
.banner { padding: 8px 12px; border-radius: 6px; }
.banner.bad { background: #fdecea; border: 1px solid var(--red); }
.banner.good { background: #edf7ed; border: 1px solid var(--green); }
.banner .prop { font-weight: 700; color: var(--red); }
#controls { display: flex; align-items: center; gap: 8px; padding: 6px 0; position: sticky; top: 0;
  background: var(--bg); z-index: 2; }
#slider { flex: 1; max-width: 520px; }
#counter { font-weight: 600; min-width: 7em; }
.hint { color: var(--grey); font-size: 12px; }
button { font: inherit; padding: 2px 10px; border: 1px solid var(--line); border-radius: 4px; background: #fff;
  cursor: pointer; }
button:hover { background: #f0f0f0; }
#goto-violation { border-color: var(--red); color: var(--red); }
#lanes-box { display: flex; border: 1px solid var(--line); border-radius: 6px; background: #fff; overflow: hidden; }
#lane-names { flex: none; border-right: 1px solid var(--line); }
#lanes { flex: 1; overflow-x: auto; }
#lanes svg, #lane-names svg { display: block; }
svg .lane-bg { fill: #fff; }
svg .lane-bg.odd { fill: #f6f7f9; }
svg .lane-name { font-size: 12px; font-weight: 700; fill: #333; }
svg .col-head { font-size: 11px; fill: var(--grey); }
svg .col-current { fill: #fff6d5; }
svg .box rect { fill: #e3f2fd; stroke: #1565c0; stroke-width: 1; }
svg .box text { font-size: 11px; fill: #0d2a4a; }
svg .box.current rect { stroke-width: 3; }
svg .box.violation rect { fill: #ffebee; stroke: var(--red); stroke-width: 2; }
svg .box.violation.current rect { stroke-width: 4; }
svg .box { cursor: pointer; }
svg .msg { stroke: #546e7a; stroke-width: 1.3; fill: none; }
svg .msg-label { font-size: 10px; fill: #37474f; }
svg .arrow { fill: #546e7a; }
main { display: grid; grid-template-columns: minmax(420px, 3fr) minmax(320px, 2fr); gap: 20px; margin-top: 10px; }
#step-title.violation { color: var(--red); }
#step-violation .banner { margin: 6px 0; }
ul { margin: 2px 0; padding-left: 20px; }
#changes li, #effects li { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; }
#effects li { font-family: inherit; font-size: 13px; }
.old { color: var(--grey); }
.new { font-weight: 700; }
.pool { margin-top: 10px; }
.pool-name { font-weight: 700; }
.pool-reader { color: var(--grey); font-weight: 400; }
.grid { display: flex; flex-wrap: wrap; gap: 4px; margin-top: 4px; }
.page { width: 72px; border: 2px solid #bbb; border-radius: 5px; background: #fff; padding: 2px 4px; font-size: 12px;
  overflow-wrap: anywhere; }
.page .pno { color: var(--grey); font-size: 10px; }
.page .owner { font-weight: 700; }
.page .content { border-radius: 3px; padding: 0 2px; }
.page .marks { font-family: ui-monospace, "DejaVu Sans Mono", monospace; color: #555; min-height: 1em; }
.page.m-free { background: #f2f2f2; border-color: #d5d5d5; color: var(--grey); }
.page.m-mine { border-color: var(--green); background: #eef8ee; }
.page.m-other { border-color: var(--purple); background: #f6eef9; }
.page.m-foreign .content { background: var(--red); color: #fff; }
.page.m-unwritten .content { background: #ffe082; }
.page.m-inflight { border-style: dashed; border-color: var(--cyan); }
.page.m-outbound { box-shadow: inset 0 -3px 0 var(--cyan); }
.page.m-violation { outline: 3px solid var(--red); outline-offset: 1px; }
.free-list { color: var(--grey); font-size: 12px; margin-top: 2px; }
#legend { margin-top: 12px; font-size: 12px; color: #444; display: flex; flex-wrap: wrap; gap: 4px 14px; }
#legend .sym { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: 700; }
table { border-collapse: collapse; font-size: 12px; }
td, th { border: 1px solid var(--line); padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; }
#props td.st { text-align: center; min-width: 22px; }
#props .st-ok { background: #e8f5e9; color: var(--green); }
#props .st-hazard { background: #fff3cd; color: var(--amber); }
#props .st-violated { background: var(--red); color: #fff; font-weight: 700; }
#props .st-after { color: #bbb; }
#props .st-unmet { background: #fff8e1; color: var(--amber); font-weight: 700; }
#props .cur { outline: 2px solid #333; outline-offset: -2px; }
#props th.cur { background: #ffe082; }
#props-notes p { margin: 4px 0; font-size: 12px; }
#props-notes .hazard { color: var(--amber); font-weight: 700; }
#props-notes .violated { color: var(--red); font-weight: 700; }
#beliefs td { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
#beliefs tr.changed td { background: #fff6d5; font-weight: 700; }
pre#reproduce { background: #263238; color: #eceff1; padding: 8px 12px; border-radius: 6px; white-space: pre-wrap; }
footer { margin-top: 14px; }
#why { margin: 0 0 8px; padding: 6px 12px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
#why h2 { font-size: 14px; }
#why table { margin-top: 4px; }
#why td { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
#why tr.reason td.belief { font-weight: 700; background: #fff6d5; }
#why tr.plain td { color: var(--grey); }
#why .differs { color: var(--red); font-weight: 700; }
#step-narrative { margin: 2px 0 6px; font-style: italic; }
#step-loop { margin: 4px 0; padding: 4px 10px; border-left: 4px solid var(--amber); background: #fff8e1; }
svg .box.in-loop rect { fill: #fff8e1; stroke: var(--amber); }
svg .loop-edge { stroke: var(--amber); stroke-width: 2; stroke-dasharray: 5 3; fill: none; }
svg .loop-label { font-size: 11px; font-weight: 700; fill: var(--amber); }
"""

_SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("trace-data").textContent);
  var steps = data.steps;
  var last = steps.length - 1;
  var violation = data.violation;
  var vstep = violation && violation.step >= 0 && violation.step <= last ? violation.step : -1;
  var SVG = "http://www.w3.org/2000/svg";
  var current = -1;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
  function clip(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "\u2026" : text; }
  var markText = {}; data.marks.forEach(function (m) { markText[m[0]] = [m[1], m[2]]; });
  var statusText = {}; data.statuses.forEach(function (s) { statusText[s[0]] = [s[1], s[2]]; });

  // ---- header
  document.title = (data.spec_class || "trace") + (vstep >= 0 ? " \u2014 " + violation.property + (violation.property === "diverged" ? " after step " : " at step ") + vstep : "") + " \u2014 ownership";
  document.getElementById("title").textContent = data.title;
  var verdict = document.getElementById("verdict");
  if (violation) {
    var b = el("div", "banner bad");
    b.appendChild(el("span", "prop", "violated: " + violation.property));
    b.appendChild(document.createTextNode(" \u2014 " + violation.message));
    if (violation.also.length) { b.appendChild(el("div", null, "also violated at this step: " + violation.also.join(", "))); }
    if (data.loop_note) { b.appendChild(el("div", "loop", "a lasso: " + data.loop_note)); }
    verdict.appendChild(b);
  } else if (!data.foreign) {
    verdict.appendChild(el("div", "banner good", "no violation recorded in this trace"));
  }
  document.getElementById("reproduce").textContent = data.reproduce || "(this trace records no reproduce command)";

  // ---- why: the view model's words (render/why.py), laid out as the terminal lays them out
  if (data.why) {
    var whyBox = document.getElementById("why");
    whyBox.hidden = false;
    whyBox.appendChild(el("h2", null, data.why.heading));
    var wt = el("table");
    function whyRow(label, cells, cls) {
      var tr = el("tr", cls || ""); tr.appendChild(el("th", null, label));
      cells.forEach(function (c) {
        var td = el("td", c[1], c[0]);
        if (cells.length === 1) { td.setAttribute("colspan", "2"); }   // a line of truth, the difference
        tr.appendChild(td);
      });
      wt.appendChild(tr);
    }
    data.why.truth.forEach(function (t, k) { whyRow(k === 0 ? "truth" : "", [[t, "truth"]]); });
    data.why.beliefs.forEach(function (b, k) {
      whyRow(k === 0 ? "beliefs" : "", [[b[0], "belief"], [b[1], "reasons"]], b[1] ? "reason" : "plain");
    });
    if (data.why.differs) { whyRow("differs", [[data.why.differs, "differs"]]); }
    whyBox.appendChild(wt);
  }

  // ---- swimlanes
  var LANE_W = 84, COL0_W = 76, COL_W = 150, ROW_H = 46, HEAD_H = 22, BOX_W = 136, BOX_H = 36;
  var lanes = data.lanes.length ? data.lanes : ["system"];
  var laneIndex = {}; lanes.forEach(function (l, k) { laneIndex[l] = k; });
  var loop = data.loop_note && typeof data.loop === "number" ? data.loop : -1;   // a lasso: the loop's start
  function inLoop(i) { return loop >= 0 && (loop < last ? i > loop : i === last); }
  var LOOP_H = loop >= 0 ? 22 : 0;   // room below the lanes for the lasso's back edge and its words
  var width = COL0_W + COL_W * (steps.length - 1) + 6, height = HEAD_H + ROW_H * lanes.length + 4 + LOOP_H;
  if (loop >= 0 && loop === last) { width += 320; }   // the dead end's words, right of its last step
  var names = svg("svg", { width: LANE_W, height: height, viewBox: "0 0 " + LANE_W + " " + height, "aria-hidden": "true" });
  var root = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img" });
  root.appendChild(svg("title", {}, "swimlanes: the steps of each actor and the handoffs between them"));
  var defs = svg("defs", {});
  var marker = svg("marker", { id: "arrowhead", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", "class": "arrow" }));
  defs.appendChild(marker); root.appendChild(defs);
  lanes.forEach(function (l, k) {
    root.appendChild(svg("rect", { x: 0, y: HEAD_H + k * ROW_H, width: width, height: ROW_H, "class": "lane-bg" + (k % 2 ? " odd" : "") }));
    names.appendChild(svg("rect", { x: 0, y: HEAD_H + k * ROW_H, width: LANE_W, height: ROW_H, "class": "lane-bg" + (k % 2 ? " odd" : "") }));
    var name = svg("text", { x: 8, y: HEAD_H + k * ROW_H + ROW_H / 2 + 4, "class": "lane-name" }, clip(l, 11));
    name.appendChild(svg("title", {}, l));
    names.appendChild(name);
  });
  document.getElementById("lane-names").appendChild(names);
  var colRect = svg("rect", { x: 0, y: 0, width: COL0_W, height: height, "class": "col-current" });
  root.appendChild(colRect);
  function colX(i) { return i === 0 ? 0 : COL0_W + (i - 1) * COL_W; }
  function colW(i) { return i === 0 ? COL0_W : COL_W; }
  function laneOf(s) { return laneIndex[s.lane] !== undefined ? laneIndex[s.lane] : 0; }
  steps.forEach(function (s, i) {
    root.appendChild(svg("text", { x: colX(i) + 8, y: 15, "class": "col-head" }, i === 0 ? "initial" : "step " + i));
  });
  var boxes = [];
  steps.forEach(function (s, i) {
    if (i === 0) { boxes.push(null); return; }
    var x = colX(i) + (COL_W - BOX_W) / 2, y = HEAD_H + laneOf(s) * ROW_H + (ROW_H - BOX_H) / 2;
    var g = svg("g", { "class": "box lane-step" + (i === vstep ? " violation" : "") + (inLoop(i) ? " in-loop" : ""), "data-step": i, tabindex: -1 });
    g.appendChild(svg("title", {}, "step " + i + ": " + s.label + (s.effects.length ? "\n" + s.effects.join("\n") : "")));
    g.appendChild(svg("rect", { x: x, y: y, width: BOX_W, height: BOX_H, rx: 5 }));
    g.appendChild(svg("text", { x: x + 6, y: y + 15 }, clip((i === vstep ? "\u26a0 " : "") + i + ". " + (s.action || ""), 21)));
    g.appendChild(svg("text", { x: x + 6, y: y + 29 }, clip(s.args.map(function (a) { return a[0] + "=" + a[1]; }).join(", "), 22)));
    g.addEventListener("click", function () { go(i); });
    root.appendChild(g);
    boxes.push(g);
  });
  data.messages.forEach(function (m) {
    var a = steps[m.from], b = steps[m.to];
    if (!a || !b) { return; }
    var x1 = colX(m.from) + (COL_W + BOX_W) / 2, y1 = HEAD_H + laneOf(a) * ROW_H + ROW_H / 2;
    var x2 = colX(m.to) + (COL_W - BOX_W) / 2, y2 = HEAD_H + laneOf(b) * ROW_H + ROW_H / 2;
    var mx = (x1 + x2) / 2;
    root.appendChild(svg("path", { d: "M " + x1 + " " + y1 + " C " + mx + " " + y1 + ", " + mx + " " + y2 + ", " + x2 + " " + y2,
      "class": "msg", "marker-end": "url(#arrowhead)" }));
    root.appendChild(svg("text", { x: mx + 3, y: (y1 + y2) / 2 - 3, "class": "msg-label" }, clip(m.request, 12)));
  });
  if (loop >= 0) {   // the lasso's back edge: from the last step back to the state it repeats
    var bx = colX(last) + colW(last) / 2, by = HEAD_H + laneOf(steps[last]) * ROW_H + (ROW_H + BOX_H) / 2;
    var tx = loop === 0 ? COL0_W / 2 : colX(loop) + colW(loop) / 2;
    var ty = loop === 0 ? HEAD_H + ROW_H * lanes.length : HEAD_H + laneOf(steps[loop]) * ROW_H + (ROW_H + BOX_H) / 2;
    var low = height - LOOP_H + 8;
    var wide = loop === last ? 40 : 0;   // a dead end loops on its own step
    var edge = svg("path", { d: "M " + bx + " " + by + " C " + (bx + wide) + " " + low + ", " + (tx - wide) + " " + low + ", " + tx + " " + ty,
      "class": "loop-edge", "marker-end": "url(#arrowhead)", "data-loop": loop });
    edge.appendChild(svg("title", {}, data.loop_note));
    root.appendChild(edge);
    root.appendChild(loop < last
      ? svg("text", { x: Math.max(4, tx + 8), y: height - 5, "class": "loop-label" }, "\u21ba steps " + (loop + 1) + ".." + last + " repeat forever")
      : svg("text", { x: bx + 30, y: height - 5, "class": "loop-label" }, "\u21ba the run stops here, no action enabled, forever"));
  }
  document.getElementById("lanes").appendChild(root);

  // ---- properties table (built once; the current column is highlighted)
  var propsBox = document.getElementById("props");
  var propCells = [];
  var propHeads = [];
  if (data.properties.length) {
    var table = el("table");
    var head = el("tr"); head.appendChild(el("th", null, "property"));
    steps.forEach(function (s, i) { var th = el("th", null, String(i)); th.title = s.label; head.appendChild(th); propHeads.push(th); });
    table.appendChild(head);
    data.properties.forEach(function (p) {
      var tr = el("tr"); var name = el("th", null, p);
      if (Object.prototype.hasOwnProperty.call(data.about, p)) { name.title = data.about[p]; }
      tr.appendChild(name);
      var row = [];
      steps.forEach(function (s, i) {
        var st = s.status[p] || ["after", ""];
        var td = el("td", "st st-" + st[0], st[0] === "ok" ? "\u2713" : st[0] === "hazard" ? "!" : st[0] === "violated" ? "\u2717" : st[0] === "unmet" ? "\u21ba" : "\u00b7");
        td.title = "step " + i + ": " + (statusText[st[0]] ? statusText[st[0]][1] : st[0]) + (st[1] ? "\n" + st[1] : "");
        td.addEventListener("click", function () { go(i); });
        tr.appendChild(td); row.push(td);
      });
      propCells.push(row); table.appendChild(tr);
    });
    propsBox.appendChild(table);
  } else {
    document.getElementById("props-title").hidden = true;
  }
  if (data.foreign) { document.getElementById("beliefs-title").textContent = "Variables"; }

  // ---- legend
  var legend = document.getElementById("legend");
  data.marks.forEach(function (m) {
    var item = el("span"); item.appendChild(el("span", "sym", m[1])); item.appendChild(document.createTextNode(" " + m[2]));
    legend.appendChild(item);
  });

  // ---- one step
  function show(i) {
    var s = steps[i];
    document.getElementById("slider").value = String(i);
    document.getElementById("counter").textContent = "step " + i + " / " + last;
    var title = document.getElementById("step-title");
    title.textContent = "Step " + i + (s.actor ? " [" + s.actor + "]" : "") + "  " + s.label + (i === vstep ? (violation.property === "diverged" ? "  \u2014 DIVERGED AFTER THIS STEP" : "  \u2014 VIOLATION") : "");
    title.className = i === vstep ? "violation" : "";
    document.body.setAttribute("data-step", String(i));
    var sn = document.getElementById("step-narrative");
    sn.textContent = s.narrative || ""; sn.hidden = !s.narrative;
    var sl = document.getElementById("step-loop");
    sl.textContent = loop < 0 ? "" : loop < last
      ? (i === loop ? "the loop starts after this state: " + data.loop_note
        : i === last ? "back to the state of step " + loop + ": " + data.loop_note
        : i > loop ? "in the loop: " + data.loop_note : "")
      : (i === last ? data.loop_note : "");
    sl.hidden = !sl.textContent;
    var sv = document.getElementById("step-violation"); clear(sv);
    if (i === vstep) {
      var b = el("div", "banner bad"); b.appendChild(el("span", "prop", violation.property + " violated at this step"));
      if (violation.pages.length) {
        b.appendChild(document.createTextNode(": " + violation.pages.map(function (pp) { return pp[0] + " page " + pp[1]; }).join(", ") +
          " (outlined below)"));
      }
      sv.appendChild(b);
    }
    var eff = document.getElementById("effects"); clear(eff);
    s.effects.forEach(function (t) { eff.appendChild(el("li", null, t)); });
    var ch = document.getElementById("changes"); clear(ch);
    if (i === 0) { ch.appendChild(el("li", null, "(the initial state)")); }
    else if (!s.changes.length) { ch.appendChild(el("li", null, "(no change)")); }
    s.changes.forEach(function (c) {
      var li = el("li"); li.appendChild(document.createTextNode(c[0] + ": "));
      li.appendChild(el("span", "old", c[1])); li.appendChild(document.createTextNode(" \u2192 "));
      li.appendChild(el("span", "new", c[2])); ch.appendChild(li);
    });
    var pools = document.getElementById("pools"); clear(pools);
    s.pools.forEach(function (p) {
      var box = el("div", "pool");
      var name = el("div", "pool-name", p.name + " pages ");
      if (p.reader) { name.appendChild(el("span", "pool-reader", "(request in view: " + p.reader + ")")); }
      box.appendChild(name);
      var grid = el("div", "grid");
      p.cells.forEach(function (c) {
        var cell = el("div", "page " + c.marks.map(function (m) { return "m-" + m; }).join(" "));
        cell.setAttribute("data-page", String(c.page));
        cell.title = p.name + " page " + c.page + ": owner " + c.owner + ", content " + c.content +
          (c.inflight !== "none" ? ", write in flight from " + c.inflight : "") +
          (c.outbound !== "none" ? ", being sent by " + c.outbound : "") + "\n" +
          c.marks.map(function (m) { return markText[m] ? markText[m][0] + " " + markText[m][1] : m; }).join("\n");
        cell.appendChild(el("div", "pno", "page " + c.page));
        cell.appendChild(el("div", "owner", c.owner));
        cell.appendChild(el("div", "content", "kv " + c.content));
        cell.appendChild(el("div", "marks", c.marks.map(function (m) { return markText[m] ? markText[m][0] : "?"; }).join("")));
        grid.appendChild(cell);
      });
      box.appendChild(grid);
      if (p.hidden) { box.appendChild(el("div", "free-list", "\u2026 and " + p.hidden + " more pages, free and unchanged at this step")); }
      if (p.free_list !== null) { box.appendChild(el("div", "free-list", "free list " + p.free_list)); }
      pools.appendChild(box);
    });
    var beliefs = document.getElementById("beliefs"); clear(beliefs);
    s.beliefs.forEach(function (row) {
      var tr = el("tr", row[2] ? "changed" : ""); tr.appendChild(el("td", null, row[0])); tr.appendChild(el("td", null, row[1]));
      beliefs.appendChild(tr);
    });
    var notes = document.getElementById("props-notes"); clear(notes);
    data.properties.forEach(function (p, k) {
      var st = s.status[p] || ["after", ""];
      propCells[k].forEach(function (td, j) { td.classList.toggle("cur", j === i); });
      if (st[0] === "hazard" || (st[0] === "violated" && !(violation && p === violation.property))) {
        var para = el("p"); para.appendChild(el("span", st[0], p + " " + statusText[st[0]][0] + ": "));
        para.appendChild(document.createTextNode(st[1])); notes.appendChild(para);
      }
    });
    propHeads.forEach(function (th, j) { th.classList.toggle("cur", j === i); });
    boxes.forEach(function (g, j) { if (g) { g.classList.toggle("current", j === i); } });
    colRect.setAttribute("x", String(colX(i)));
    colRect.setAttribute("width", String(colW(i)));
    var lb = document.getElementById("lanes");   // scroll only when the step is out of view
    if (colX(i) < lb.scrollLeft || colX(i) + colW(i) > lb.scrollLeft + lb.clientWidth) {
      lb.scrollLeft = Math.max(0, colX(i) - lb.clientWidth / 2 + colW(i) / 2);
    }
  }
  window.addEventListener("resize", function () { if (current >= 0) { show(current); } });
  function go(i) {
    i = Math.max(0, Math.min(last, i));
    if (i !== current) { current = i; show(i); }
  }

  // ---- controls
  var slider = document.getElementById("slider");
  slider.max = String(last);
  slider.addEventListener("input", function () { go(parseInt(slider.value, 10)); });
  document.getElementById("prev").addEventListener("click", function () { go(current - 1); });
  document.getElementById("next").addEventListener("click", function () { go(current + 1); });
  var gv = document.getElementById("goto-violation");
  if (vstep >= 0) { gv.hidden = false; gv.addEventListener("click", function () { go(vstep); }); }
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) { return; }
    var k = e.key;
    if (k === "ArrowLeft") { e.preventDefault(); go(current - 1); }
    else if (k === "ArrowRight") { e.preventDefault(); go(current + 1); }
    else if (k === "Home") { e.preventDefault(); go(0); }
    else if (k === "End") { e.preventDefault(); go(last); }
  });
  go(typeof data.start === "number" ? data.start : 0);
})();
"""
