"""Checkpoints of a breadth-first search: the visited states, level by level, on disk.

A checkpoint is a folder:

    checkpoint.json          what the checkpoint holds (written last, atomically)
    part-0/level-0.npz       partition 0's states of level 0: packed rows, parents, bindings
    part-0/level-1.npz ...

Each level of each partition is written once, when the level is complete everywhere, so a
checkpoint costs one write of every state (about k * 8 + 10 bytes a state), not one per
level. checkpoint.json names the levels that are complete; files of a later level, left by
a run killed while writing, are ignored and written again. `--resume DIR` checks that the
checkpoint was made by the same spec text, parameters, fixes, skipped properties, symmetry
and number of workers (`Recipe.digest`), and continues from its last level.

Loading never executes code: the arrays are read with numpy's `allow_pickle=False`, and every
field of checkpoint.json and every array is checked (type, shape, counts) before it is used;
a damaged or foreign checkpoint is a UsageError naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..trace import whole_file, write_output

FORMAT = "ownership-checkpoint"
#: 2: states are packed without the positions no action writes (NOTE(constant-positions)), so
#: a version-1 checkpoint's words would be read wrongly and are refused
VERSION = 2
META = "checkpoint.json"


@dataclass
class Meta:
    """What checkpoint.json says: levels 0 .. levels-1 are complete in every partition."""

    digest: str
    parts: int
    levels: int
    sizes: list[list[int]]        # per level, per partition: states
    transitions: int              # transitions of the levels expanded (0 .. levels-2)
    reached: dict[str, bool]      # sometimes properties reached so far


@dataclass
class LevelFile:
    words: np.ndarray       # uint64, k x n
    parent_part: np.ndarray
    parent_id: np.ndarray
    via: np.ndarray
    orbit: np.ndarray | None


def _level_path(where: str, part: int, d: int) -> Path:
    return Path(where) / f"part-{part}" / f"level-{d}.npz"


def start(where: str, digest: str, parts: int) -> None:
    """Prepare an empty (or new) folder for a checkpoint; refuse one that holds a checkpoint."""
    path = Path(where)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--checkpoint {where}: it is a file; give the name of a folder (it is created if missing)")
    if (path / META).exists():
        raise UsageError(f"--checkpoint {where}: the folder already holds a checkpoint; continue it with"
                         f" --resume {where}, or give an empty folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        for i in range(parts):
            (path / f"part-{i}").mkdir(exist_ok=True)
    except OSError as e:
        raise UsageError(f"--checkpoint {where}: cannot create the folder: {e.strerror or e}") from None


def write_level(where: str, part: int, d: int, *, words: np.ndarray, parent_part: np.ndarray,
                parent_id: np.ndarray, via: np.ndarray, orbit: np.ndarray | None) -> None:
    """Write one partition's level (whole or not at all: a temporary file, then renamed)."""
    target = _level_path(where, part, d)
    arrays = {"words": np.ascontiguousarray(words), "parent_part": parent_part, "parent_id": parent_id, "via": via}
    if orbit is not None:
        arrays["orbit"] = orbit
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with whole_file(target) as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]
    except OSError as e:
        raise UsageError(f"cannot write the checkpoint to {target}: {e.strerror or e}") from None


def read_level(where: str, part: int, d: int, k: int) -> LevelFile:
    """Read and check one partition's level of a checkpoint."""
    path = _level_path(where, part, d)

    def damaged(why: str) -> UsageError:
        return UsageError(f"--resume {where}: {path} is damaged ({why}); start the run again without --resume")

    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except FileNotFoundError:
        raise damaged("missing") from None
    except (OSError, ValueError, KeyError, EOFError) as e:
        raise damaged(f"not a checkpoint file: {e}") from None
    need = {"words": np.uint64, "parent_part": np.int32, "parent_id": np.uint32}
    for name, dtype in need.items():
        if name not in arrays or arrays[name].dtype != dtype:
            raise damaged(f"no {name} array of {np.dtype(dtype).name}")
    words = arrays["words"]
    n = words.shape[1] if words.ndim == 2 else -1
    if words.ndim != 2 or words.shape[0] != k:
        raise damaged(f"its states have {words.shape[0] if words.ndim == 2 else '?'} words, the spec's {k}")
    via = arrays.get("via")
    if via is None or via.dtype.kind != "u":
        raise damaged("no via array of unsigned integers")
    orbit = arrays.get("orbit")
    for name, a in (("parent_part", arrays["parent_part"]), ("parent_id", arrays["parent_id"]), ("via", via),
                    ("orbit", orbit)):
        if a is not None and (a.ndim != 1 or a.size != n):
            raise damaged(f"{name} has {a.size} entries for {n} states")
    if orbit is not None and orbit.dtype != np.int64:
        raise damaged("orbit is not int64")
    return LevelFile(words, arrays["parent_part"], arrays["parent_id"], via, orbit)


def write_meta(where: str, meta: Meta) -> None:
    doc = {"format": FORMAT, "version": VERSION, "digest": meta.digest, "parts": meta.parts, "levels": meta.levels,
           "sizes": meta.sizes, "transitions": meta.transitions, "reached": meta.reached}
    write_output(Path(where) / META, json.dumps(doc) + "\n", "checkpoint")


def read_meta(where: str, digest: str, parts: int) -> Meta:
    """checkpoint.json, checked field by field, and against the run that resumes it."""
    path = Path(where) / META

    def bad(why: str) -> UsageError:
        return UsageError(f"--resume {where}: {why}")

    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise bad(f"no {META} there: the folder holds no checkpoint (one is written with --checkpoint DIR)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise bad(f"{path} is not a checkpoint ({type(e).__name__ if isinstance(e, RecursionError) else e});"
                  " start the run again without --resume") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise bad(f"{path} is not an ownership checkpoint")
    if doc.get("version") != VERSION:
        raise bad(f"{path} has format version {doc.get('version')!r}; this ownership reads version {VERSION}")

    def nat(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    levels, sizes, nparts = doc.get("levels"), doc.get("sizes"), doc.get("parts")
    if not (nat(levels) and nat(nparts) and nat(doc.get("transitions")) and isinstance(doc.get("digest"), str)
            and isinstance(sizes, list) and len(sizes) == levels and levels >= 1
            and all(isinstance(s, list) and len(s) == nparts and all(nat(x) for x in s) for s in sizes)
            and isinstance(doc.get("reached"), dict)
            and all(isinstance(k, str) and isinstance(v, bool) for k, v in doc["reached"].items())):
        raise bad(f"{path} is damaged (a field is missing or of the wrong type); start the run again without --resume")
    if doc["digest"] != digest:
        raise bad("the checkpoint was written by another run: the spec's text, its parameters, fixes, release,"
                  " skipped properties or --symmetry differ; resume with exactly the options of the run that wrote it")
    if nparts != parts:
        raise bad(f"the checkpoint was written by {nparts} workers, and this run has {parts}: give --workers {nparts}")
    return Meta(doc["digest"], nparts, levels, sizes, doc["transitions"], doc["reached"])
