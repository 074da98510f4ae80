"""Straight-line code from the batch graph (ownership.ir.graph), shared by its two backends:
numpy (ownership.interpret.batch) and C (ownership.interpret.native) (issue 30, item 1).

The walk is the same for both: the nodes a root needs are written once each, children first
(in the order of their ids), one statement a node, `t<id>` its name. How one node is written is
the backend's, from its table (NOTE(emit-tables)); how a value goes into its bit field of a
packed word is the backend's `FieldForm`.

NOTE(emit-tables): each backend writes every operation of ownership.ir.ops.OPERATIONS from one
table of its own (`Emitter.FORMS`), keyed by the operation's name: a `Form` (a format of the
arguments' references), or, where a backend chooses among several spellings (numpy's byte
tables or loop for first and nth, its table of nth at a constant j, the arrays of select), the
method that chooses, named in the table. The operations numpy and C write alike are written
once (`COMMON_FORMS`). tests/language/test_operations.py fails when a backend's table lacks an operation
the graph can hold, or names one outside OPERATIONS. The graph's leaves (`var`, `const`) and
`stack` (a select's values) are not operations: each backend writes them itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import InternalError
from ..ir import ops
from ..ir.graph import Graph, Node
from ..ir.tracer import BOOL, INT


@dataclass(frozen=True)
class Form:
    """How a backend writes one operation: `text`, a format of the node's arguments ({0}, {1},
    ...; a trailing constant, nth's default, as a literal), each referenced as `want` says
    ("int": an integer, "bool": a condition, "sort": as the node's own sort, "": as it is; one
    for all, or one an argument); with `join`, {0} is every argument, joined by it."""

    text: str
    want: str | tuple[str, ...] = ""
    join: str | None = None


#: A row of a backend's table: a Form, or the emitter's method that chooses the spelling.
Spelling = Form | Callable[[Any, int], str]

#: The operations numpy and C write alike (Python's operators and C's agree on int64 and on
#: conditions 0 and 1): the common rows of both tables.
COMMON_FORMS: dict[str, Spelling] = {
    "eq": Form("({0} == {1})"),
    "ne": Form("({0} != {1})"),
    "lt": Form("({0} < {1})"),
    "le": Form("({0} <= {1})"),
    "gt": Form("({0} > {1})"),
    "ge": Form("({0} >= {1})"),
    "and": Form("({0})", "bool", join=" & "),
    "or": Form("({0})", "bool", join=" | "),
    "xor": Form("({0} ^ {1})", "bool"),
    "bitand": Form("({0} & {1})", "int"),
    "bitor": Form("({0} | {1})", "int"),
    "bitxor": Form("({0} ^ {1})", "int"),
    "compl": Form("(~{0})", "int"),
}


class Emitter:
    """Straight-line code for a set of root nodes, each node computed once; a backend gives
    `FORMS` (NOTE(emit-tables)), `literal`, `coerce`, `column` and `_line`."""

    #: the backend's name, for messages
    BACKEND: ClassVar[str] = ""
    #: how the backend writes each operation (NOTE(emit-tables))
    FORMS: ClassVar[dict[str, Spelling]] = {}

    def __init__(self, graph: Graph) -> None:
        self.g = graph
        self.lines: list[str] = []
        self.done: set[int] = set()

    # -- what a backend gives ---------------------------------------------------------------

    def literal(self, v: Any, *, as_int: bool = False, as_bool: bool = False) -> str:
        """A constant as the code writes it."""
        raise NotImplementedError

    def coerce(self, name: str, sort: str, *, as_int: bool, as_bool: bool) -> str:
        """A computed value `name` of `sort`, referenced as an integer or a condition."""
        raise NotImplementedError

    def column(self, position: int) -> str:
        """The value of a state position (a column of X, a field of P)."""
        raise NotImplementedError

    def _line(self, n: int) -> str:
        """The statement that computes node n."""
        raise NotImplementedError

    def stack(self, node: Node) -> str:
        """A select's values (only a backend that writes them as an expression)."""
        raise InternalError(f"the {self.BACKEND} backend writes a select's values as a statement")

    # -- the walk ---------------------------------------------------------------------------

    def ref(self, n: int, *, as_int: bool = False, as_bool: bool = False) -> str:
        """The reference to node n's value (its code emitted first, once)."""
        node = self.g.nodes[n]
        if node.op == "const":
            return self.literal(node.value, as_int=as_int, as_bool=as_bool)
        self.need(n)
        return self.coerce(f"t{n}", node.sort, as_int=as_int, as_bool=as_bool)

    def need(self, root: int) -> None:
        """Emit the code of `root` and of everything it depends on (iteratively, in id order)."""
        if root in self.done or self.g.nodes[root].op == "const":
            return
        todo: set[int] = set()
        stack = [root]
        while stack:
            n = stack.pop()
            if n in todo or n in self.done:
                continue
            node = self.g.nodes[n]
            if node.op == "const":
                continue
            todo.add(n)
            stack.extend(self._children(node))
        for n in sorted(todo):
            self.done.add(n)
            self.lines.append(self._line(n))

    def _children(self, node: Node) -> list[int]:
        if node.op in ("var", "const"):
            return []
        if node.op == "stack":
            return list(node.args)
        if node.op == "select":
            if self.constant_values(node) is not None:
                return [node.args[1]]
            return [node.args[0], node.args[1]]
        if node.op == "nth":
            return [node.args[0], node.args[1]]
        return list(node.args)

    def constant_values(self, select: Node) -> list[Any] | None:
        """The values a select picks from when every one is a constant, else None."""
        values = self.g.nodes[select.args[0]].args
        if all(self.g.is_const(v) for v in values):
            return [self.g.cval(v) for v in values]
        return None

    def _expr(self, n: int) -> str:
        """The expression of node n: its leaf, or its operation from the table."""
        node = self.g.nodes[n]
        if node.op == "var":
            v = self.column(node.value)
            return f"({v} != 0)" if node.sort == BOOL else v
        if node.op == "stack":
            return self.stack(node)
        spelling = self.FORMS.get(node.op)
        if spelling is None:
            raise InternalError(f"the {self.BACKEND} backend has no form for the operation {node.op!r}"
                                " (NOTE(emit-tables))")
        if isinstance(spelling, Form):
            return self.written(spelling, node)
        return spelling(self, n)

    def written(self, form: Form, node: Node) -> str:
        """A node written by its Form."""
        n_args = len(node.args) - ops.OPERATIONS[node.op].constants
        wants = form.want if isinstance(form.want, tuple) else (form.want,) * n_args
        refs = [self._ref_as(x, want, node) for x, want in zip(node.args[:n_args], wants)]
        if form.join is not None:
            return form.text.format(form.join.join(refs))
        return form.text.format(*refs, *(self.literal(c) for c in node.args[n_args:]))

    def _ref_as(self, n: int, want: str, node: Node) -> str:
        if want == "sort":
            want = "int" if node.sort == INT else "bool"
        return self.ref(n, as_int=want == "int", as_bool=want == "bool")


@dataclass(frozen=True)
class FieldForm:
    """How a backend writes a value into its bit field of a packed word: as an unsigned word
    (`word`; a condition by `condition`), less the field's lower bound (`offset`) where it has
    one, masked to the field's bits (`mask`: under 64 bits, or every field with `always_mask`)
    and shifted into place (`shift`)."""

    word: str
    offset: str
    condition: str
    mask: str
    shift: str = "({v} << {shift})"
    always_mask: bool = False

    def piece(self, value: str, field: Any, is_bool: bool = False) -> str:
        """`value` in its field's bits of the word (the field: ownership.interpret.batch.Field)."""
        if is_bool:
            v = self.condition.format(v=value)
        else:
            v = self.word.format(v=self.offset.format(v=value, lo=field.lo) if field.lo else value)
        if field.bits < 64 or self.always_mask:
            v = self.mask.format(v=v, mask=(1 << field.bits) - 1)
        return self.shift.format(v=v, shift=field.shift) if field.shift else v

    def pieces(self, values: Iterable[tuple[Any, str, bool]]) -> dict[int, list[str]]:
        """Per word, the pieces of (field, value, is a condition) in order."""
        out: dict[int, list[str]] = {}
        for field, value, is_bool in values:
            out.setdefault(field.word, []).append(self.piece(value, field, is_bool))
        return out
