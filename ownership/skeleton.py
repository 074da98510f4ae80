"""The skeleton of a new spec and its docs page (`ownership new NAME`): a prefill node that
computes a request's KV and sends it to a decode node, with one bug (prefill frees its pages
while the transfer still reads them: free-in-flight) and its fix, and a page that says where
each real source, the bug and the fix go. The page's outputs are filled by running the
checker on the new spec, so the user starts from a spec that checks.

`make(name, folder)` writes NAME.py and NAME.md there, never over a file that exists, and
returns their paths; the command (ownership/cli/new.py) fills the page.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import UsageError

#: The spec's text: {Class}, {Title} and {file} are replaced.
SPEC = '''"""{Title}: a prefill node computes a request's KV and sends it to a decode node.

Made by `ownership new`: a skeleton to change into your protocol. Each action is one step of
the real code; say which function in its docstring. Replace this paragraph with what the spec
models (the real source files and functions), the bug it reproduces (the issue or PR), and
what it leaves out.

    ownership check {file}                        # violated: free-in-flight
    ownership check {file} --fix free-after-land  # verified
    ownership matrix {file}                       # each fix against each property
"""

from enum import IntEnum

from ownership import Request, Spec, action, fix, param, per_request, pool, sometimes


class Stage(IntEnum):
    NEW = 0        # arrived, nothing allocated
    SENDING = 1    # prefill wrote the KV; the transfer to decode is in flight
    DECODING = 2   # the KV landed; decode reads it
    DONE = 3       # finished: every page returned


class {Class}(Spec):
    requests = param(2, "requests")
    pages = param(1, "pages a request needs on each node")
    free_after_land = fix("prefill frees its pages once the transfer has landed, not when it starts it")

    prefill = pool(2)
    decode = pool(2)
    stage = per_request(Stage, Stage.NEW)

    @action
    def prefill_and_send(self, s, r: Request):
        """Prefill computes r's KV and starts the transfer into pages decode reserved."""
        s.require(s.stage[r] == Stage.NEW)
        into = s.alloc("decode", r, self.pages)
        out = s.alloc("prefill", r, self.pages)
        s.write("prefill", r, out)
        s.send(r, "prefill", out, "decode", into)
        if not self.free_after_land:
            s.free("prefill", r, out)              # the bug: the transfer still reads these pages
        s.stage[r] = Stage.SENDING

    @action
    def land(self, s, r: Request):
        """The transfer completes; prefill frees its pages (with the fix: only now)."""
        s.require((s.stage[r] == Stage.SENDING) & s.in_flight(r))
        s.land(r)
        if self.free_after_land:
            s.free("prefill", r, s.owned("prefill", r))
        s.stage[r] = Stage.DECODING

    @action
    def decode_and_finish(self, s, r: Request):
        """Decode attends over r's pages, finishes, and returns them."""
        s.require(s.stage[r] == Stage.DECODING)
        s.read("decode", r, s.owned("decode", r))
        s.free("decode", r, s.owned("decode", r))
        s.stage[r] = Stage.DONE

    @sometimes
    def a_request_finishes(self, s):
        """Some request is decoded to the end: the protocol is not stuck before it."""
        return s.stage[1] == Stage.DONE

    def finished(self, s, r):
        """r has left both nodes: its pages must all be back (the leak property)."""
        return s.stage[r] == Stage.DONE
'''

#: The docs page's text: {Title}, {file}, and the outputs {bug}, {fixed}, {matrix}.
PAGE = '''# {Title}

What this spec models, in a few lines: the real protocol, its nodes and who owns each page
when. Made by `ownership new`; the sections below were filled by running the checker on the
skeleton: run the commands again after each change, and replace the text in your own words.

## Sources

| action | real code |
|---|---|
| `prefill_and_send(r)` | (the prefill function that allocates, computes and starts the transfer) |
| `land(r)` | (the transfer engine's completion callback) |
| `decode_and_finish(r)` | (the decode step, the request's finish and release) |

The bug: (the issue or pull request, and the release it is in). The fix: (the pull request,
and the first release with it). What the spec leaves out: (batching, chunking, retries...).

## The bug

    $ ownership check {file}
{bug}

## The fix

    $ ownership check {file} --fix free-after-land
{fixed}

## Design review matrix

<!-- ownership matrix {file} --markdown -->
{matrix}
<!-- end of the matrix -->
'''

#: What a new spec's name may be: a Python module's name, in lower case.
NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def class_name(name: str) -> str:
    """handoff_v2 -> HandoffV2."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def paths(name: str, folder: str | Path) -> tuple[Path, Path]:
    """Where NAME.py and NAME.md go; refused (UsageError) for a bad name or a file that exists."""
    if not NAME.fullmatch(name) or not class_name(name):
        raise UsageError(f"ownership new {name!r}: a spec's name is a Python module name in lower case (letters,"
                         " digits, _; a letter first), e.g. ownership new handoff")
    folder = Path(folder)
    spec, page = folder / f"{name}.py", folder / f"{name}.md"
    for path in (spec, page):
        if path.exists():
            raise UsageError(f"{path} exists already: ownership new never writes over a file; give another NAME"
                             " or --dir")
    return spec, page


def spec_text(name: str, file: str) -> str:
    title = name.replace("_", " ").capitalize()
    return SPEC.replace("{Class}", class_name(name)).replace("{Title}", title).replace("{file}", file)


def page_text(name: str, file: str, *, bug: str, fixed: str, matrix: str) -> str:
    title = name.replace("_", " ").capitalize()
    indent = lambda text: "\n".join(("    " + line).rstrip() for line in text.strip().splitlines())  # noqa: E731
    return (PAGE.replace("{Title}", title).replace("{file}", file).replace("{bug}", indent(bug))
            .replace("{fixed}", indent(fixed)).replace("{matrix}", matrix.strip()))
