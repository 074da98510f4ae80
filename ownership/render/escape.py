"""Text that is safe to print on a terminal, whatever a trace or a spec put into it.

A trace file is data from anywhere: an action name, an argument or a slot name in it may hold
terminal control sequences (ESC ] 0 sets the window title, ESC [ 2 J clears the screen),
bidirectional overrides (U+202E shows text reversed) or a lone surrogate (not encodable).
`printable` replaces each such character with a visible escape (`\\x1b`, `\\u202e`), keeping
newlines (our own line structure) and tabs. Every line ownership writes to a terminal from a
trace or a spec goes through it: errors, `check`, `replay`, `show`, `--mermaid` (issue 12).
"""

from __future__ import annotations

import re
import unicodedata

#: C0 controls but tab and newline, DEL, and C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

#: Unicode categories escaped beyond those: format characters (bidi embeddings, overrides and
#: isolates, zero-width joiners), surrogates, and the line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cf", "Cs", "Zl", "Zp"})


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control, format or surrogate character shown as an escape."""
    text = _CONTROL.sub(lambda m: _escape(m.group(0)), text)
    if text.isascii():
        return text
    return "".join(_escape(c) if unicodedata.category(c) in _UNSAFE_CATEGORIES else c for c in text)


__all__ = ["printable"]
