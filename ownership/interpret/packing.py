"""Packed states: where each position of a flat state lives in a row of 64-bit words.

`Layout` gives each position a bit field (value minus its slot's lower bound), none straddling
a word, none for a position of one constant value (NOTE(constant-positions) in
ownership.interpret.batch), and a wide page set's limbs a column each (NOTE(wide-pages));
`pack` and `unpack` convert a block of unpacked int64 columns to words and back.
"""


from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ir.graph import LIMB_BITS, LIMB_MASK, join_limbs, limb_plan, split_limbs
from ..lang.model import Model
from .batch_runtime import _compile

# --------------------------------------------------------------------------- packing


@dataclass(frozen=True)
class Field:
    """Where one state position lives in a packed row."""

    word: int
    shift: int
    bits: int
    lo: int


class Layout:
    """How a state packs into 64-bit words: one bit field per position, none straddling a word.

    `constant`: positions that keep one value in every reachable state, with that value; they
    take no bits (NOTE(constant-positions))."""

    def __init__(self, model: Model, constant: dict[int, int] | None = None) -> None:
        """`constant`: by column of the unpacked matrix (a position's own column when it has
        one; NOTE(wide-pages))."""
        _, self.cols = limb_plan(model)
        #: the positions of several columns (wide page sets), with their columns
        self.wide = [(i, c) for i, c in enumerate(self.cols) if len(c) > 1]
        self.width = model.width
        self.columns = max([model.width] + [c[-1] + 1 for _, c in self.wide])
        fields: list[Field | None] = [None] * self.columns
        word, shift = 0, 0
        constant = constant or {}
        for slot in model.slots:
            for e in range(slot.length):
                for k, col in enumerate(self.cols[slot.offset + e]):
                    if col in constant:
                        fields[col] = Field(word, shift, 0, int(constant[col]))
                        continue
                    lo, hi = slot.lo, slot.hi
                    if k or len(self.cols[slot.offset + e]) > 1:   # a limb of a wide page set
                        lo, hi = 0, min(LIMB_MASK, slot.hi >> (LIMB_BITS * k))
                    bits = max(0, (hi - lo).bit_length())
                    if shift + bits > 64:
                        word, shift = word + 1, 0
                    fields[col] = Field(word, shift, bits, lo)
                    shift += bits
        self.fields: list[Field] = fields  # type: ignore[assignment]
        self.words = word + 1
        self.bits = sum(f.bits for f in self.fields)
        self.pack: Callable[[np.ndarray], np.ndarray] = self._compile_pack()
        self.unpack: Callable[[np.ndarray], np.ndarray] = self._compile_unpack()

    def _compile_pack(self) -> Callable[[np.ndarray], np.ndarray]:
        lines = ["def pack(X):", f"    P = np.zeros(({self.words}, X.shape[1]), dtype=np.uint64)"]
        for i, f in enumerate(self.fields):
            if f.bits == 0:
                continue
            v = f"X[{i}]" if f.lo == 0 else f"(X[{i}] - {f.lo})"
            v = f"{v}.astype(np.uint64)"
            if f.shift:
                v = f"({v} << {f.shift})"
            lines.append(f"    P[{f.word}] |= {v}")
        lines.append("    return P")
        return _compile("\n".join(lines), "pack")

    def _compile_unpack(self) -> Callable[[np.ndarray], np.ndarray]:
        lines = ["def unpack(P):", f"    X = np.empty(({self.columns}, P.shape[1]), dtype=np.int64)",
                 "    U = X.view(np.uint64)", "    T = np.empty(P.shape[1], dtype=np.uint64)"]
        for i, f in enumerate(self.fields):
            if f.bits == 0:
                lines.append(f"    X[{i}] = {f.lo}")
                continue
            src = f"P[{f.word}]"
            if f.shift and f.shift + f.bits < 64:
                lines.append(f"    np.right_shift({src}, {f.shift}, out=T)")
                src = "T"
            if f.shift + f.bits < 64:
                lines.append(f"    np.bitwise_and({src}, {(1 << f.bits) - 1}, out=U[{i}])")
            elif f.shift:
                lines.append(f"    np.right_shift({src}, {f.shift}, out=U[{i}])")
            else:
                lines.append(f"    U[{i}] = {src}")
            if f.lo:
                lines.append(f"    X[{i}] += {f.lo}")
        lines.append("    return X")
        return _compile("\n".join(lines), "unpack")

    def pack_rows(self, states: list[tuple[int, ...]]) -> np.ndarray:
        """Packed words (words x n) of concrete states."""
        if self.wide:
            return self.pack(np.array([self.split(st) for st in states], dtype=np.int64)
                             .reshape(len(states), self.columns).T.copy())
        X = np.array(states, dtype=np.int64).reshape(len(states), self.width).T
        return self.pack(np.ascontiguousarray(X))

    def split(self, state: tuple[int, ...]) -> list[int]:
        """A concrete state's value in each column (a wide page set's limbs: NOTE(wide-pages))."""
        out = list(state) + [0] * (self.columns - self.width)
        for i, cols in self.wide:
            for col, limb in zip(cols, split_limbs(int(state[i]), len(cols))):
                out[col] = limb
        return out

    def unpack_row(self, P: np.ndarray, j: int) -> tuple[int, ...]:
        """The concrete state of column j of packed words P (the flat tuple of Python ints)."""
        X = self.unpack(np.ascontiguousarray(P[:, j:j + 1]))
        out = [int(v) for v in X[:self.width, 0]]
        for i, cols in self.wide:
            out[i] = join_limbs([int(X[c, 0]) for c in cols])
        return tuple(out)

