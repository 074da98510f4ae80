"""Checkpoints of a breadth-first search: the visited states, level by level, on disk.

A checkpoint is a folder:

    checkpoint.json          what the checkpoint holds (written last, atomically)
    part-0/level-0.npz       partition 0's states of level 0: packed rows, parents, bindings
    part-0/level-1.npz ...

Each level of each partition is written once, when the level is complete everywhere, so a
checkpoint costs one write of every state (about k * 8 + 10 bytes a state), not one per
level. checkpoint.json names the levels that are complete, with the sha256 of each of their
files, and a checksum of its own content; files of a later level, left by a run killed while
writing, are ignored and written again. `--resume DIR` checks that the checkpoint was made by
the same spec text, parameters, fixes, skipped properties, symmetry and number of workers
(`Recipe.digest`), with states packed the same way (`layout_fingerprint`), and continues from
its last level.

Loading never executes code and never trusts the folder (issue 29: a damaged level once
resumed to a wrong "verified", and another to an impossible counterexample): each file's bytes
must have the checksum recorded for them, the arrays are read with numpy's
`allow_pickle=False`, and every field of checkpoint.json and every array is checked (type,
shape, counts, and the values: NOTE(checked-levels)) before it is used. A damaged, foreign,
older or incomplete checkpoint is a UsageError naming the file, never a verdict. The checksums
find damage (a disk, a copy, an edit), not forgery: whoever can write the folder and recompute
them can make it say anything, as with the spec file itself.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UsageError, shorten
from ..interpret.batch import Layout
from ..ir.graph import LIMB_BITS
from ..lang.model import Model
from ..trace import whole_file

FORMAT = "ownership-checkpoint"
#: 2: states are packed without the positions no action writes (NOTE(constant-positions)), so
#: a version-1 checkpoint's words would be read wrongly and are refused.
#: 3: checksums of every file and the packing's fingerprint (issue 29); a version-2 checkpoint
#: has neither, so nothing tells a damaged one apart, and it is refused.
VERSION = 3
META = "checkpoint.json"

#: no count or size in checkpoint.json is larger (numpy's ids and Python's printing stay sane)
_LARGEST = (1 << 63) - 1
_LEVEL = re.compile(r"level-(0|[1-9][0-9]{0,8})\.npz")
_PART = re.compile(r"part-(0|[1-9][0-9]{0,8})")
_HEX = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20  # bytes read at a time for a checksum; states checked at a time


@dataclass
class Meta:
    """What checkpoint.json says: levels 0 .. levels-1 are complete in every partition."""

    digest: str
    parts: int
    levels: int
    sizes: list[list[int]]        # per level, per partition: states
    transitions: int              # transitions of the levels expanded (0 .. levels-2)
    reached: dict[str, bool]      # sometimes properties reached so far
    layout: str = ""              # layout_fingerprint of the packed words
    files: dict[str, str] = field(default_factory=dict)  # "part-I/level-D.npz": its sha256

    def start(self, part: int, d: int) -> int:
        """The local id of partition `part`'s first state of level d (its states before it)."""
        return sum(self.sizes[j][part] for j in range(d))


@dataclass
class LevelFile:
    words: np.ndarray       # uint64, k x n
    parent_part: np.ndarray
    parent_id: np.ndarray
    via: np.ndarray
    orbit: np.ndarray | None


@dataclass
class Saved:
    """One partition's level written (or not) into the checkpoint: what the driver records."""

    name: str          # the file inside the checkpoint folder: part-I/level-D.npz
    sha256: str = ""   # the checksum of its bytes; "" when it could not be written
    error: str = ""    # why it could not be written (a full disk: the search stops, issue 29)


def level_name(part: int, d: int) -> str:
    """A level file's name inside the checkpoint folder."""
    return f"part-{part}/level-{d}.npz"


def _level_path(where: str, part: int, d: int) -> Path:
    return Path(where) / level_name(part, d)


def layout_fingerprint(layout: Layout, bindings: int) -> str:
    """What a checkpoint's packed words and bindings mean: each position's word, shift, bits and
    offset (constant positions take none, NOTE(constant-positions)), and the number of
    bindings. The same spec and options pack differently in another version of ownership; a
    checkpoint of another packing would be read as other states, so it is refused."""
    fields = [[f.word, f.shift, f.bits, f.lo] for f in layout.fields]
    text = json.dumps([layout.words, layout.columns, layout.width, fields, bindings])
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Packing:
    """What the words of a packed state may hold: the bits of each word that some position
    uses, and the positions whose bits could hold more than their domain's largest value."""

    used: tuple[int, ...]                          # per word: the mask of its used bits
    bounded: tuple[tuple[int, int, int, int], ...]  # (word, shift, mask, largest value stored)


def packing_of(layout: Layout, model: Model) -> Packing:
    """The Packing of `layout`, with each position's domain from the model's slots (a limb of
    a wide page set: its part of the domain, NOTE(wide-pages))."""
    used = [0] * layout.words
    bounded = []
    for slot in model.slots:
        for e in range(slot.length):
            cols = layout.cols[slot.offset + e]
            for k, col in enumerate(cols):
                f = layout.fields[col]
                if f.bits == 0:
                    continue
                mask = (1 << f.bits) - 1
                used[f.word] |= mask << f.shift
                hi = slot.hi - slot.lo if len(cols) == 1 else min((1 << LIMB_BITS) - 1, slot.hi >> (LIMB_BITS * k))
                if hi < mask:
                    bounded.append((f.word, f.shift, mask, hi))
    return Packing(tuple(used), tuple(bounded))


def start(where: str, digest: str, parts: int) -> None:
    """Prepare an empty (or new) folder for a checkpoint; refuse one that holds a checkpoint,
    or the partitions of another run that a resume would find there."""
    path = Path(where)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--checkpoint {where}: it is a file; give the name of a folder (it is created if missing)")
    if (path / META).exists():
        raise UsageError(f"--checkpoint {where}: the folder already holds a checkpoint; continue it with"
                         f" --resume {where}, or give an empty folder")
    try:
        stray = [p.name for p in path.iterdir() if _foreign_part(p.name, parts)] if path.is_dir() else []
        if stray:
            raise UsageError(f"--checkpoint {where}: the folder holds {shorten(min(stray))}, left by a run of more"
                             " workers; give an empty folder")
        path.mkdir(parents=True, exist_ok=True)
        for i in range(parts):
            (path / f"part-{i}").mkdir(exist_ok=True)
    except OSError as e:
        raise UsageError(f"--checkpoint {where}: cannot create the folder: {e.strerror or e}") from None


def _foreign_part(name: str, parts: int) -> bool:
    """A partition's folder that a checkpoint of `parts` partitions does not have."""
    m = _PART.fullmatch(name)
    return m is not None and int(m.group(1)) >= parts


def write_level(where: str, part: int, d: int, *, words: np.ndarray, parent_part: np.ndarray,
                parent_id: np.ndarray, via: np.ndarray, orbit: np.ndarray | None) -> Saved:
    """Write one partition's level (whole or not at all: a temporary file, then renamed).
    A file that cannot be written (a full disk, any OSError) is said in the Saved, not
    raised: the search stops with the coverage it reached (issue 29)."""
    target = _level_path(where, part, d)
    arrays = {"words": np.ascontiguousarray(words), "parent_part": parent_part, "parent_id": parent_id, "via": via}
    if orbit is not None:
        arrays["orbit"] = orbit
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with whole_file(target) as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]
        return Saved(level_name(part, d), sha256=_sha256(target))
    except OSError as e:
        return Saved(level_name(part, d), error=str(e.strerror or e))


def _sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read a chunk at a time."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def damaged(where: str, name: str, why: str) -> UsageError:
    """The error of a checkpoint file that cannot be trusted: names the file, says to start again."""
    return UsageError(f"--resume {where}: {Path(where) / name} is damaged ({why}); start the run again without"
                      " --resume")


def read_level(where: str, meta: Meta, part: int, d: int, k: int) -> LevelFile:
    """Read one partition's level of a checkpoint: its bytes checked against the checksum
    checkpoint.json records, then its arrays' types, shapes and counts (the level's size in
    checkpoint.json). Its values are checked by check_level."""
    name = level_name(part, d)
    path = Path(where) / name
    try:
        if _sha256(path) != meta.files[name]:
            raise damaged(where, name, "its checksum is not the one checkpoint.json records")
        with np.load(path, allow_pickle=False) as z:
            arrays = {n: z[n] for n in z.files}
    except FileNotFoundError:
        raise damaged(where, name, "missing") from None
    except UsageError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        raise damaged(where, name, f"not a checkpoint file: {shorten(f'{type(e).__name__}: {e}')}") from None
    need = {"words": np.uint64, "parent_part": np.int32, "parent_id": np.uint32}
    for key, dtype in need.items():
        if key not in arrays or arrays[key].dtype != dtype:
            raise damaged(where, name, f"no {key} array of {np.dtype(dtype).name}")
    words = arrays["words"]
    n = words.shape[1] if words.ndim == 2 else -1
    if words.ndim != 2 or words.shape[0] != k:
        raise damaged(where, name, f"its states have {words.shape[0] if words.ndim == 2 else '?'} words, the spec's {k}")
    if n != meta.sizes[d][part]:
        raise damaged(where, name, f"it holds {n:,} states, and checkpoint.json counts {meta.sizes[d][part]:,}")
    via = arrays.get("via")
    if via is None or via.dtype.kind != "u":
        raise damaged(where, name, "no via array of unsigned integers")
    orbit = arrays.get("orbit")
    for key, a in (("parent_part", arrays["parent_part"]), ("parent_id", arrays["parent_id"]), ("via", via),
                   ("orbit", orbit)):
        if a is not None and (a.ndim != 1 or a.size != n):
            raise damaged(where, name, f"{key} has {a.size} entries for {n} states")
    if orbit is not None and orbit.dtype != np.int64:
        raise damaged(where, name, "orbit is not int64")
    return LevelFile(words, arrays["parent_part"], arrays["parent_id"], via, orbit)


def check_level(where: str, meta: Meta, part: int, d: int, lv: LevelFile, *, packing: Packing, bindings: int,
                largest_orbit: int | None) -> None:
    """The values of a level read from a checkpoint, checked before any is used.

    NOTE(checked-levels): a level's values must be what the search could have stored: a
    parent in the previous level of its partition (level 0: none), a binding of the model, no
    bit set outside the packed positions and no position past its domain, an orbit size (under
    symmetry, and only then) from 1 to the number of renamings. The partition checks the rest
    (Partition.load): level 0 is the initial state, each state is its partition's by hash and
    is stored once. The checksums already find damage; these find a checkpoint that a bug or a
    hand made consistent, and keep a wrong parent from sending a counterexample anywhere."""
    name = level_name(part, d)
    n = lv.words.shape[1]
    if d == 0:
        if n and (np.any(lv.parent_part != -1) or np.any(lv.parent_id != 0) or np.any(lv.via != 0)):
            raise damaged(where, name, "the initial state has a parent")
    elif n:
        pp = lv.parent_part.astype(np.int64)
        if pp.min() < 0 or pp.max() >= meta.parts:
            raise damaged(where, name, f"a parent's partition is outside 0..{meta.parts - 1}")
        lo = np.array([meta.start(p, d - 1) for p in range(meta.parts)], np.int64)
        hi = lo + np.array(meta.sizes[d - 1], np.int64)
        pid = lv.parent_id.astype(np.int64)
        if np.any(pid < lo[pp]) or np.any(pid >= hi[pp]):
            raise damaged(where, name, f"a state's parent is not a state of level {d - 1}")
    if n and int(lv.via.max()) >= bindings:
        raise damaged(where, name, f"a state was reached by binding {int(lv.via.max()):,}; the model has {bindings:,}")
    if (lv.orbit is None) != (largest_orbit is None):
        raise damaged(where, name, "orbit sizes without symmetry" if largest_orbit is None else "no orbit sizes")
    if n and lv.orbit is not None and largest_orbit is not None and (lv.orbit.min() < 1 or lv.orbit.max() > largest_orbit):
        raise damaged(where, name, f"an orbit size outside 1..{largest_orbit:,}")
    for s in range(0, n, _CHUNK):
        if not _fits(lv.words[:, s:s + _CHUNK], packing):
            raise damaged(where, name, "a state holds a value that its packing cannot")


def _fits(words: np.ndarray, packing: Packing) -> bool:
    """No bit of `words` outside the packed positions, and no position past its domain."""
    for w, used in enumerate(packing.used):
        if np.any(words[w] & np.uint64(~used & _MASK64)):
            return False
    for w, shift, mask, largest in packing.bounded:
        if np.any((words[w] >> np.uint64(shift)) & np.uint64(mask) > np.uint64(largest)):
            return False
    return True


_MASK64 = (1 << 64) - 1


def write_meta(where: str, meta: Meta) -> None:
    """Write checkpoint.json (whole or not at all), with the checksum of its content.
    OSError when it cannot be written: the caller stops the search (issue 29)."""
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "digest": meta.digest, "layout": meta.layout,
                           "parts": meta.parts, "levels": meta.levels, "sizes": meta.sizes,
                           "transitions": meta.transitions, "reached": meta.reached, "files": meta.files}
    doc["checksum"] = meta_checksum(doc)
    with whole_file(Path(where) / META) as f:
        f.write((json.dumps(doc) + "\n").encode())


def meta_checksum(doc: dict[str, Any]) -> str:
    """The sha256 of checkpoint.json's fields but the checksum itself, as canonical JSON."""
    rest = {k: v for k, v in doc.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def read_meta(where: str, digest: str, layout: str, parts: int) -> Meta:
    """checkpoint.json, checked (checksum, then field by field), against the run that resumes
    it, and against the folder's files."""
    path = Path(where) / META

    def bad(why: str) -> UsageError:
        return UsageError(f"--resume {where}: {why}")

    def broken(why: str) -> UsageError:
        return bad(f"{path} is damaged ({why}); start the run again without --resume")

    doc = _parse(path, bad)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise bad(f"{path} is not an ownership checkpoint")
    version = doc.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and 0 < version < VERSION:
        raise bad(f"{path} was written by an older ownership (checkpoint format version {version}; this one reads"
                  f" version {VERSION}, with checksums); start the run again without --resume")
    if version != VERSION:
        raise bad(f"{path} has format version {shorten(json.dumps(version))}; this ownership reads version {VERSION}")
    if not isinstance(doc.get("checksum"), str) or doc["checksum"] != meta_checksum(doc):
        raise broken("its checksum does not match its content")
    meta = _fields(doc)
    if meta is None:
        raise broken("a field is missing, of the wrong type or out of range")
    if meta.digest != digest:
        raise bad("the checkpoint was written by another run: the spec's text, its parameters, fixes, release,"
                  " skipped properties or --symmetry differ; resume with exactly the options of the run that wrote it")
    if meta.layout != layout:
        raise bad("the checkpoint's states are packed another way (written by another version of ownership);"
                  " start the run again without --resume")
    if meta.parts != parts:
        raise bad(f"the checkpoint was written by {meta.parts} workers, and this run has {parts}: give --workers {meta.parts}")
    _check_folder(where, meta)
    return meta


def _parse(path: Path, bad: Any) -> Any:
    """checkpoint.json's JSON; bad input (not a traceback) when it is missing or not JSON."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise bad(f"no {META} there: the folder holds no checkpoint (one is written with --checkpoint DIR)") from None
    except ValueError as e:  # (JSON's errors, and an integer past Python's 4,300 digits)
        why = "an integer of more than 4,300 digits" if "digits" in str(e) else shorten(str(e))
        raise bad(f"{path} is not a checkpoint ({why}); start the run again without --resume") from None
    except (OSError, UnicodeDecodeError, RecursionError) as e:
        raise bad(f"{path} is not a checkpoint ({type(e).__name__}); start the run again without --resume") from None


def _fields(doc: dict[str, Any]) -> Meta | None:
    """checkpoint.json's fields as a Meta, or None when one is missing, mistyped or out of range."""
    def nat(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _LARGEST

    levels, sizes, nparts, files = doc.get("levels"), doc.get("sizes"), doc.get("parts"), doc.get("files")
    if not (nat(levels) and nat(nparts) and nat(doc.get("transitions")) and isinstance(doc.get("digest"), str)
            and isinstance(doc.get("layout"), str) and isinstance(sizes, list) and len(sizes) == levels
            and levels >= 1 and nparts >= 1
            and all(isinstance(s, list) and len(s) == nparts and all(nat(x) for x in s) for s in sizes)
            and sum(sizes[0]) == 1 and isinstance(doc.get("reached"), dict)
            and all(isinstance(k, str) and isinstance(v, bool) for k, v in doc["reached"].items())
            and isinstance(files, dict) and all(isinstance(v, str) and _HEX.fullmatch(v) for v in files.values())
            and set(files) == {level_name(i, d) for i in range(nparts) for d in range(levels)}):
        return None
    return Meta(doc["digest"], nparts, levels, sizes, doc["transitions"], doc["reached"], doc["layout"], files)


def _check_folder(where: str, meta: Meta) -> None:
    """Every file checkpoint.json records is there, and nothing else is in the partitions'
    folders (a level file of a later level is a run's leftover: written again; a hidden
    temporary, one killed mid-write)."""
    root = Path(where)
    for name in sorted(meta.files):
        if not (root / name).is_file():
            raise damaged(where, name, "missing")
    try:
        for entry in sorted(root.iterdir()):
            if _foreign_part(entry.name, meta.parts):
                raise _extra(where, entry.name)
            if _PART.fullmatch(entry.name) and entry.is_dir():
                for inner in sorted(entry.iterdir()):
                    if not (_LEVEL.fullmatch(inner.name) or inner.name.startswith(".level-")):
                        raise _extra(where, f"{entry.name}/{inner.name}")
    except OSError as e:
        raise UsageError(f"--resume {where}: cannot read the folder: {e.strerror or e}") from None


def _extra(where: str, name: str) -> UsageError:
    return UsageError(f"--resume {where}: {Path(where) / shorten(name)} is not part of the checkpoint (checkpoint.json"
                      " does not record it: a copy of another checkpoint?); remove it, or start the run again"
                      " without --resume")
