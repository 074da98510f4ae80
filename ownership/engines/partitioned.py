"""The partitioned breadth-first search: the visited set split by hash over workers (Ray).

`ownership check SPEC --ray ADDRESS`: each of N partitions owns the states whose hash falls in
it (its part of the visited set, its store of packed rows, and each state's parent) and
expands its part of every BFS level with the batch interpreter. The successors are sent to
the partitions that own them, packed as in the batch engine (a row of uint64 words, the
parent's id and the binding: about k * 8 + 6 bytes a state), through Ray's object store; each
partition keeps the new ones. The driver only coordinates: per level, expand everywhere, then
exchange, then count. It holds no state.

The same search as the single-process engine (ownership.engines.batch), level by level:
- the same states (a state is kept by exactly one partition, once), the same transitions, the
  same verdict and a counterexample of the same (shortest) length; the counterexample's path
  is rebuilt from partition to partition and replayed in the concrete semantics. Which one of
  several shortest counterexamples is reported may differ (with one partition it is the same);
- at one depth, the events rank as in the single-process engine (NOTE(first-event) there): a
  state of level d that violates a property (depth d), a spec error of such a state, a step of
  level d that violates a kernel property (depth d + 1), a state of level d + 1 that violates
  one, and last a step that raises a spec error;
- limits stop at level boundaries: `max_depth` and `max_states` give `bounded` (with
  max_states the last level is cut to the limit, and the states kept are checked), Ctrl-C and
  `max_seconds` `inconclusive` with the levels completed so far; a worker lost mid-run
  (a crashed process, a node gone) is `inconclusive` too ("worker-lost"), never verified;
- checkpoints (ownership.engines.checkpoint): with `checkpoint=DIR` every partition writes each
  new level of its states when the level is complete, and `resume=DIR` continues from the last
  complete level, with the final counts of an uninterrupted run; each partition checks the
  levels it reads (NOTE(checked-levels)). A level that cannot be written (a full disk) stops the
  search, `inconclusive` ("checkpoint-failed"), with the coverage reached (issue 29).

The partitions (ownership.engines.partition) run in this process (`Local`, for one partition:
a checkpointed run without Ray) or as Ray actors (`OnRay`). Engines never print: progress goes
to the reporter.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InternalError, OwnershipError, UsageError
from ..interpret.batch import BatchModel
from ..interpret.concrete import Concrete
from ..lang.model import Model
from ..limits import TICK, Held, deferred, parse_seconds
from ..progress import Progress, Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import build_trace
from . import checkpoint as ckpt
from .batch import supports
from .cluster import Recipe
from .partition import Checked, Expanded, Partition
from .paths import actual_run, raise_state_error, raise_step_error

# --------------------------------------------------------------------------- where partitions run


class Local:
    """Partitions in this process (one, for a checkpointed run without Ray)."""

    def __init__(self, model: Model, parts: int, symmetry: bool, block: int) -> None:
        self.parts = [Partition(model, i, parts, symmetry=symmetry, block=block, share=parts) for i in range(parts)]

    def call(self, method: str, *args: Any) -> list[Any]:
        return [getattr(p, method)(*args) for p in self.parts]

    def one(self, i: int, method: str, *args: Any) -> Any:
        return getattr(self.parts[i], method)(*args)

    def expand(self, d: int, want: bool) -> list[Expanded]:
        outs = [p.expand(d, want) for p in self.parts]
        self._batches = [o[1:] for o in outs]
        return [o[0] for o in outs]

    def exchange(self, d: int) -> list[tuple[int, int]]:
        batches, self._batches = self._batches, []
        return [p.receive(d, *[batches[src][i] for src in range(len(self.parts))]) for i, p in enumerate(self.parts)]

    def close(self) -> None:
        self.parts = []


class WorkerLost(Exception):
    """A Ray worker died, became unreachable, or stopped answering mid-search; `stopped_by`
    says which ("worker-lost", or "worker-unresponsive" from the watchdog of OnRay)."""

    def __init__(self, what: str, stopped_by: str = "worker-lost") -> None:
        super().__init__(what)
        self.stopped_by = stopped_by


class TimeUp(Exception):
    """The search's max_seconds passed while the driver waited for the workers."""


#: A partition that answers no ping for this long is taken for frozen (a stopped process, a
#: node cut off that Ray still counts alive): the search stops, inconclusive, stopped by
#: "worker-unresponsive", with the levels completed (issue 29: it waited for good).
UNRESPONSIVE_SECONDS = 30.0

#: How often the driver pings each partition while it waits for them.
PING_EVERY = 1.0

#: Partitions not all built this long after they were asked for stop the search, inconclusive,
#: stopped by "worker-unresponsive": the cluster cannot place them (its CPUs held, a node
#: lost: the search waited for good when the local raylet had died). A build takes seconds.
START_SECONDS = 180.0


class OnRay:
    """Partitions as Ray actors, named `ownership-<run>-<i>` (so that an operator, or a test,
    can find them); the successors move between them through Ray's object store, never
    through the driver.

    A watchdog: while the driver waits, it pings every partition once a PING_EVERY; a ping
    runs in a concurrency group of its own ("watch"), beside the partition's work, so that a
    busy partition answers and a frozen one does not (after UNRESPONSIVE_SECONDS: WorkerLost,
    "worker-unresponsive"). Only once every partition is built: a partition being built
    answers nothing, and its start is bounded by max_seconds and START_SECONDS."""

    def __init__(self, ray: Any, recipe: Recipe, parts: int, symmetry: bool, block: int, held: Any,
                 deadline: float | None = None) -> None:
        self.ray = ray
        self.held = held
        self.deadline = deadline  # (time.monotonic(): max_seconds, also while the workers start)
        self.run = uuid.uuid4().hex[:8]
        from .cluster import cluster_cpus

        # (more partitions than CPUs share them: each asks for its share, so that all start)
        actor = ray.remote(num_cpus=min(1.0, cluster_cpus(ray) / parts), concurrency_groups={"watch": 1})(Partition)
        self.actors = [actor.options(name=f"ownership-{self.run}-{i}").remote(
            recipe, i, parts, symmetry=symmetry, block=block, share=parts) for i in range(parts)]
        self._outs: list[Any] = []
        self.pings: dict[int, tuple[Any, float]] = {}  # the ping in flight of each partition, and when it was sent
        self.heard: list[float] | None = None  # when each partition last answered a ping (None: not watched yet)
        try:
            self.wait([a.ready.remote() for a in self.actors], start=time.monotonic())
        except BaseException:  # (stopped while they start: none is left holding its CPUs)
            self.close()
            raise
        self.heard = [time.monotonic()] * parts

    def wait(self, refs: Sequence[Any], start: float | None = None) -> list[Any]:
        """The values of `refs`, waiting TICK at a time so that Ctrl-C and limits act (NOTE(deferred));
        `start`: the partitions are being built since then (START_SECONDS at most)."""
        ray = self.ray
        pending = list(refs)
        while pending:
            self.held.poll()
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise TimeUp
            if start is not None and time.monotonic() - start >= START_SECONDS:
                raise WorkerLost(f"{len(pending)} of {len(refs)} partitions did not start within {START_SECONDS:g} s"
                                 " (the cluster could not place them: its CPUs held, or a node lost)",
                                 stopped_by="worker-unresponsive")
            self._watch()
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=TICK)
        self.held.poll()
        try:
            return list(ray.get(list(refs)))
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if isinstance(getattr(e, "cause", None), BaseException) else None
            if isinstance(cause, OwnershipError):
                raise cause from None
            raise InternalError(f"a partition failed: {cause or e}") from None
        except ray.exceptions.RayError as e:  # an actor died, a node was lost, an object was lost
            raise WorkerLost(str(e).splitlines()[0] if str(e) else type(e).__name__) from None

    def _watch(self) -> None:
        """The watchdog (see the class): note the pings answered, raise WorkerLost for one
        unanswered for UNRESPONSIVE_SECONDS, send a ping to each partition due one. A ping
        of a dead actor counts as answered: waiting on its work says it died (WorkerLost)."""
        if self.heard is None:
            return
        now = time.monotonic()
        if self.pings:
            answered, _ = self.ray.wait([ref for ref, _ in self.pings.values()], num_returns=len(self.pings), timeout=0)
            done = set(answered)
            for i, (ref, sent) in list(self.pings.items()):
                if ref in done:
                    del self.pings[i]
                    self.heard[i] = now
                elif now - sent >= UNRESPONSIVE_SECONDS:
                    raise WorkerLost(f"partition {i} answered no ping for {UNRESPONSIVE_SECONDS:g} s",
                                     stopped_by="worker-unresponsive")
        for i, a in enumerate(self.actors):
            if i not in self.pings and now - self.heard[i] >= PING_EVERY:
                self.pings[i] = (a.ready.options(concurrency_group="watch").remote(), now)

    def call(self, method: str, *args: Any) -> list[Any]:
        return self.wait([getattr(a, method).remote(*args) for a in self.actors])

    def one(self, i: int, method: str, *args: Any) -> Any:
        return self.wait([getattr(self.actors[i], method).remote(*args)])[0]

    def expand(self, d: int, want: bool) -> list[Expanded]:
        n = len(self.actors)
        self._outs = [a.expand.options(num_returns=n + 1).remote(d, want) for a in self.actors]
        return self.wait([o[0] for o in self._outs])

    def exchange(self, d: int) -> list[tuple[int, int]]:
        outs, self._outs = self._outs, []
        n = len(self.actors)
        return self.wait([a.receive.remote(d, *[outs[src][1 + i] for src in range(n)])
                          for i, a in enumerate(self.actors)])

    def close(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001 (an actor already gone is what we wanted)
                pass
        self.actors = []


# --------------------------------------------------------------------------- the driver




@dataclass
class Level:
    """One level's figures, kept for the benchmarks' cost model (bytes exchanged per state)."""

    depth: int
    states: int        # new states of the next level
    successors: int    # transitions expanded at this level
    sent: int          # bytes sent between different partitions
    kept_local: int    # bytes a partition sent to itself


class _Stop(Exception):
    def __init__(self, result: CheckResult) -> None:
        self.result = result


def check(model: Model, *, recipe: Recipe | None = None, ray: Any = None, parts: int = 1,
          max_states: int | None = None, max_depth: int | None = None, max_seconds: float | None = None,
          symmetry: bool = False, checkpoint: str | None = None, resume: str | None = None,
          reporter: Reporter | None = None, report_every: float = 0.5, block: int = 1 << 15) -> CheckResult:
    """Search `model` breadth first over `parts` partitions: Ray actors when `ray` (a connected
    Ray module) is given, with `recipe` to build the model in each; else in this process."""
    why = supports(model)
    if why is not None:
        raise UsageError(why + "; the partitioned search needs the batch engine")
    max_seconds = parse_seconds(max_seconds)
    if parts < 1:
        raise UsageError(f"{parts} workers: a partitioned search needs at least 1")
    if (ray is not None or checkpoint is not None or resume is not None) and recipe is None:
        raise UsageError("a partitioned search on Ray or with a checkpoint needs the recipe of its model"
                         " (ownership.engines.cluster.Recipe.of(spec, model))")
    bm = BatchModel(model, reachable=True)  # (the driver's: names, bits, the checks below; partitions build their own)
    if symmetry:
        from .symmetry import require_symmetric

        require_symmetric(model, bm)
    if bm.unsupported is not None:
        raise UsageError("the partitioned search needs the batch engine, and this spec's values need more than"
                         " 64 bits; check it without --ray and --checkpoint")
    return _Driver(model, bm, recipe, ray, parts, max_states=max_states, max_depth=max_depth, max_seconds=max_seconds,
                   symmetry=symmetry, checkpoint=checkpoint, resume=resume, reporter=reporter,
                   report_every=report_every, block=block).run()


class _Driver:
    """Coordinates one partitioned search; holds counts, never states."""

    def __init__(self, model: Model, bm: BatchModel, recipe: Recipe | None, ray: Any, parts: int, *, max_states: int | None,
                 max_depth: int | None, max_seconds: float | None, symmetry: bool, checkpoint: str | None,
                 resume: str | None, reporter: Reporter | None, report_every: float, block: int) -> None:
        self.model, self.recipe, self.ray, self.parts = model, recipe, ray, parts
        self.max_states, self.max_depth, self.max_seconds = max_states, max_depth, max_seconds
        self.symmetry, self.block = symmetry, block
        self.checkpoint = checkpoint or resume
        self.resume = resume
        self.reporter, self.report_every = reporter, report_every
        self.start = self.last_report = time.monotonic()
        self.names = bm.sometimes_names
        self.bits = bm.layout.bits
        self.layout = ckpt.layout_fingerprint(bm.layout, len(model.bindings))  # (what a checkpoint's words mean)
        self.files: dict[str, str] = {}   # the checkpoint's level files so far, with their checksums
        self.reached = {n: False for n in self.names}
        self.sizes: list[list[int]] = []   # per level, per partition: states
        self.transitions = 0
        #: transitions per binding (the actions' coverage; None on a resumed checkpoint, whose
        #: earlier levels this run did not expand)
        self.fired: list[int] | None = [0] * len(model.bindings)
        self.levels: list[Level] = []
        self.peak = 0
        self.represented = 0   # under symmetry: the states the representatives stand for
        self.where: Any = None

    def _want(self) -> bool:
        return not all(self.reached.values())

    def _note(self, reached: Sequence[bool]) -> None:
        for name, hit in zip(self.names, reached):
            self.reached[name] = self.reached[name] or bool(hit)

    def states(self) -> int:
        return sum(sum(lv) for lv in self.sizes)

    def _report(self, depth: int, force: bool = False) -> None:
        now = time.monotonic()
        if self.reporter is None or (not force and now - self.last_report < self.report_every):
            return
        self.last_report = now
        per = tuple(sum(lv[i] for lv in self.sizes) for i in range(self.parts))
        self.reporter(Progress(now - self.start, kind="partitioned", states=self.states(),
                               transitions=self.transitions, depth=depth, per_worker=per,
                               sent_bytes=sum(lv.sent for lv in self.levels)))

    def run(self) -> CheckResult:
        # On Ray, Ctrl-C and the limits are held while the driver waits inside Ray's client,
        # and raised between two waits (NOTE(deferred)); in this process they act at once.
        with deferred() if self.ray is not None else contextlib.nullcontext(Held()) as held:
            try:
                if self.ray is not None and self.recipe is not None:
                    deadline = None if self.max_seconds is None else self.start + self.max_seconds
                    self.where = OnRay(self.ray, self.recipe, self.parts, self.symmetry, self.block, held, deadline)
                else:
                    self.where = Local(self.model, self.parts, self.symmetry, self.block)
                return self._search()
            except _Stop as stop:
                return stop.result
            except WorkerLost as lost:  # (died, or frozen: "worker-unresponsive")
                return self._finish(lost.stopped_by, self._bound(), note=str(lost))
            except TimeUp:  # (on Ray: the workers are stopped mid-level; the levels done count)
                return self._finish("max-seconds", self._bound())
            except KeyboardInterrupt:  # Ctrl-C, or a command's limit (ownership.limits)
                return self._finish("interrupt", self._bound())
            finally:
                if self.where is not None:
                    self.where.close()

    def _bound(self) -> int | None:
        """The depth up to which every state was checked: the levels expanded so far."""
        done = len(self.sizes) - 2  # (the last level kept is not yet checked)
        return done if done >= 0 else None

    def _search(self) -> CheckResult:
        where = self.where
        d = 0
        if self.resume is not None:
            meta = ckpt.read_meta(self.resume, self._digest(), self.layout, self.parts)
            got = where.call("load", self.resume, meta)
            self.files = dict(meta.files)
            self.sizes = [list(s) for s in meta.sizes]
            self.represented = sum(o for _, o in got)
            if [n for n, _ in got] != [sum(lv[i] for lv in self.sizes) for i in range(self.parts)]:
                raise UsageError(f"--resume {self.resume}: the checkpoint's files do not hold the states its"
                                 " checkpoint.json counts (a partial copy?); start the run again without --resume")
            self.transitions = meta.transitions
            self.fired = None
            self.reached.update({n: v for n, v in meta.reached.items() if n in self.reached})
            d = meta.levels - 1
        else:
            kept = where.call("seed")
            self.sizes = [[n for n, _ in kept]]
            self.represented = sum(o for _, o in kept)
            if self.checkpoint is not None:
                ckpt.start(self.checkpoint, self._digest(), self.parts)
                self._save(0)
        while sum(self.sizes[d]) > 0:
            if self.max_depth is not None and d >= self.max_depth:
                self._checked(d)
                return self._finish("max-depth", d)
            if self.max_seconds is not None and time.monotonic() - self.start >= self.max_seconds:
                return self._finish("max-seconds", self._bound())
            outs = where.expand(d, self._want())
            self.peak = max(self.peak, sum(o.rss for o in outs))
            self._events(d, outs)
            got = where.exchange(d)
            new = [n for n, _ in got]
            self.represented += sum(o for _, o in got)
            self.transitions += sum(o.transitions for o in outs)
            if self.fired is not None:
                for o in outs:
                    if o.fired is not None:
                        self.fired = [a + int(b) for a, b in zip(self.fired, o.fired)]
            sent = sum(o.sent[j] for i, o in enumerate(outs) for j in range(self.parts) if i != j)
            local = sum(o.sent[i] for i, o in enumerate(outs))
            self.levels.append(Level(d, sum(new), sum(o.transitions for o in outs), sent, local))
            self.sizes.append(new)
            pending = next(((i, o.step_error) for i, o in enumerate(outs) if o.step_error is not None), None)
            if pending is not None:  # a state of level d + 1 that violates a property comes first
                self._checked(d + 1)
                self._raise_step_error(*pending)
            if self.max_states is not None and self.states() >= self.max_states:
                self._cut(d + 1)
                self._checked(d + 1)
                return self._finish("max-states", d)
            d += 1
            if self.checkpoint is not None:
                self._save(d)
            self._report(d)
        return self._finish(None, None)

    def _digest(self) -> str:
        if self.recipe is None:
            raise InternalError("a checkpointed search without the recipe of its model")
        return self.recipe.digest()

    def _save(self, d: int) -> None:
        """Level d is complete everywhere: every partition writes it, then the driver's
        checkpoint.json says the checkpoint now holds levels 0..d (written last, atomically),
        with each file's checksum. A file that cannot be written (a full disk) stops the
        search with the coverage it reached (issue 29): the checkpoint keeps levels 0..d-1."""
        assert self.checkpoint is not None
        saved: list[ckpt.Saved] = self.where.call("save_level", self.checkpoint, d)
        failed = next((s for s in saved if s.error), None)
        if failed is None:
            self.files.update({s.name: s.sha256 for s in saved})
            try:
                ckpt.write_meta(self.checkpoint, ckpt.Meta(self._digest(), self.parts, d + 1, self.sizes,
                                                           self.transitions, dict(self.reached), self.layout,
                                                           dict(self.files)))
                return
            except OSError as e:
                failed = ckpt.Saved(ckpt.META, error=str(e.strerror or e))
        raise _Stop(self._unsaved(d, failed))

    def _unsaved(self, d: int, failed: ckpt.Saved) -> CheckResult:
        """The result of a search whose level d could not be checkpointed: inconclusive, with
        the coverage reached, and what the checkpoint still holds."""
        result = self._finish("checkpoint-failed", self._bound())
        held = (f"it is complete up to level {d - 1}, and --resume {self.checkpoint} continues from there" if d
                else "it holds no level")
        said = f"the checkpoint could not be written, {failed.name}: {failed.error}; {held}"
        result.note = f"{result.note}; {said}" if result.note else said
        return result

    def _events(self, d: int, outs: list[Expanded]) -> None:
        """After level d's expansion: the events in the single-process engine's order."""
        self._states_failed(d, outs)
        for i, o in enumerate(outs):
            if o.flag is not None:
                self.transitions += sum(x.transitions for x in outs)
                self._stop_at_step(i, *o.flag, d)

    def _checked(self, d: int) -> None:
        """Check level d's states (no expansion); a violation ends the search."""
        self._states_failed(d, self.where.call("check_level", d, self._want()))

    def _states_failed(self, d: int, outs: Sequence[Expanded | Checked]) -> None:
        """What the partitions found in level d's states: a violation ends the search; else
        the first spec error is raised; the sometimes properties reached are noted."""
        for o in outs:
            self._note(o.reached)
        for i, o in enumerate(outs):
            if o.bad is not None:
                self._stop_at_state(i, o.bad, d)
        for i, o in enumerate(outs):
            if o.state_error is not None:
                raise_state_error(self.model, self.symmetry, *self._path(i, o.state_error))

    def _cut(self, d: int) -> None:
        """Cut the last level so that the search keeps exactly max_states states."""
        assert self.max_states is not None
        room = self.max_states - sum(sum(lv) for lv in self.sizes[:d])
        keep = []
        for n in self.sizes[d]:
            keep.append(max(0, min(n, room)))
            room -= keep[-1]
        for i, k in enumerate(keep):
            if k < self.sizes[d][i]:
                self.represented -= self.where.one(i, "cut", d, k)
        self.sizes[d] = keep

    def _path(self, part: int, sid: int) -> tuple[list[tuple[int, ...]], list[int]]:
        """The stored states and bindings from the initial state to state `sid` of partition `part`."""
        states, via = [], []
        while True:
            step = self.where.one(part, "step_of", sid)
            states.append(step.state)
            if step.parent_part < 0:
                break
            via.append(step.via)
            part, sid = step.parent_part, step.parent_id
        return states[::-1], via[::-1]

    def _raise_step_error(self, part: int, at: tuple[int, int]) -> None:
        stored, via = self._path(part, at[0])
        raise_step_error(self.model, self.symmetry, stored, via, at[1])

    def _stop_at_state(self, part: int, sid: int, d: int) -> None:
        stored, via = self._path(part, sid)
        states, bindings = actual_run(self.model, self.symmetry, stored, via)
        flags = Concrete(self.model).state_flags(states[-1])
        if not flags:
            raise InternalError("the batch and concrete interpreters disagree on a state property")
        raise _Stop(self._violation(states, bindings, flags, d))

    def _stop_at_step(self, part: int, sid: int, b: int, d: int) -> None:
        stored, via = self._path(part, sid)
        states, bindings = actual_run(self.model, self.symmetry, stored, via + [b])
        out = Concrete(self.model).step(states[-2], self.model.bindings[bindings[-1]])
        if out is None or not out.flags:
            raise InternalError("the batch and concrete interpreters disagree on a kernel flag")
        raise _Stop(self._violation(states, bindings, out.flags, d + 1))

    def _violation(self, states: list[tuple[int, ...]], bindings: list[int], flags: Any, depth: int) -> CheckResult:
        model = self.model
        trace = build_trace(model, states, [model.bindings[b] for b in bindings], flags, engine="explicit")
        return CheckResult(Verdict.VIOLATED, self._coverage(False, "violation", depth, None), "explicit", trace=trace,
                           sometimes={k: (True if v else None) for k, v in self.reached.items()}, note=self._how())

    def _coverage(self, complete: bool, stopped_by: str | None, depth: int, bound: int | None) -> Coverage:
        before = self.represented if self.symmetry else None
        return Coverage(self.states(), self.transitions, depth, complete=complete, stopped_by=stopped_by,
                        seconds=time.monotonic() - self.start, bound_depth=bound, states_before_symmetry=before,
                        bits_per_state=self.bits, peak_memory=self.peak or None,
                        actions=self.model.action_counts(self.fired) if complete and self.fired is not None else None)

    def _finish(self, stopped_by: str | None, bound: int | None, note: str = "") -> CheckResult:
        depth = max(len(self.sizes) - 1, 0)  # (no level yet: stopped while the workers started)
        while depth > 0 and sum(self.sizes[depth]) == 0:
            depth -= 1
        complete = stopped_by is None
        if stopped_by in ("worker-lost", "worker-unresponsive"):
            cov = Coverage(self.states(), self.transitions, depth, complete=False, stopped_by=stopped_by,
                           seconds=time.monotonic() - self.start, bound_depth=bound)
        else:
            cov = self._coverage(complete, stopped_by, depth, None if complete else bound)
        result = CheckResult.of_search(cov, self.reached)
        # (per level: successors and bytes sent, for the benchmarks' cost model)
        result.levels = self.levels  # type: ignore[attr-defined]
        result.note = self._how(note)
        return result

    def _how(self, lost: str = "") -> str:
        """How the search ran, in words (CheckResult.note)."""
        if self.ray is None and self.parts == 1:
            how = ""
        else:
            where = "Ray workers" if self.ray is not None else "partitions in this process"
            how = f"the visited states in {self.parts} parts, searched by {self.parts} {where}"
        if lost:
            how += ("; " if how else "") + f"a worker was lost ({lost}): the levels it took part in are not counted"
        return how
