"""Mutation testing of ownership's kernel and symmetry check: our own small mutator.

Each mutant is one small change to one target module (a comparison flipped, a `_flag(...)`
call removed, a loop cut to its first element, ...). A mutant is *killed* when the chosen
tests fail (or hang: killed by timeout) with it, and *survives* when they all pass. Every
survivor is either a gap in the tests or equivalent to the original code; the judged
equivalent ones are listed, with the reason, in tests/mutation/equivalent.py.

Run it from the repository root with the project's virtualenv (about 25 minutes for both
targets on 2 cores):

    . .venv/bin/activate
    python tests/mutation/run.py                       # both targets, their default tests
    python tests/mutation/run.py ownership/kernel.py   # one target
    python tests/mutation/run.py --list                # the mutants, without running them
    python tests/mutation/run.py --only 'write:*'      # mutants whose key matches a glob
    python tests/mutation/run.py --tests tests/        # another test selection (whole suite)
    python tests/mutation/run.py --show KEY            # the diff of one mutant
    python tests/mutation/run.py --report r.json       # every outcome as JSON ...
    python tests/mutation/run.py --resume r.json       # ... then, after adding tests, run
                                                       # only the mutants not killed there
    python tests/mutation/run.py --summary r.json      # the numbers of a report again

It never writes into the repository: the last commit (HEAD: commit new tests first, or give
--worktree to take the working tree as it is, other people's edits in progress included) is
copied once per job to --workdir (default /tmp/mutation-work/w0, w1, ...), each mutant is
written into a job's copy, and pytest runs there with the copy first on sys.path (checked
before anything runs: `ownership.__file__` must be the copy's). The unmutated selection must
pass in the copy first. Exit status: 0 when no mutant survives apart from the judged
equivalent ones, 1 otherwise, 2 on a usage or setup error.

Mutation operators (the `op` of each mutant's key):

  cmp       == <-> !=, < <-> <=, > <-> >=, is <-> is not, in <-> not in
  bool      & <-> |, `and` <-> `or`; + <-> -
  operand   `a & b`, `a | b`, `a + b`, `a - b`, `a and b`, `a or b`: keep one operand only
  invert    `~x` -> `x`, `not x` -> `x`, `-x` -> `x`
  const     an int constant n -> n+1 and n-1 (so 0 -> 1, 1 -> 0); True <-> False
  ite       If(c, a, b) -> If(c, b, a); `a if c else b` -> `b if c else a`
  stmt      a statement removed (replaced by `pass`): an assignment, a loop, an `if`, a raise
  call      a call statement removed: `s._flag(...)`, `s.require(...)`, `s._check(...)`, ...
  return    `return x` -> a constant of the return type (None, True/False, 0, [])
  loop      a loop's range shortened: `for x in xs` -> the first element only, or all but it
            (`s.model.pools` -> the first pool; generators(...) -> the swap only)
  args      two adjacent positional arguments swapped; two adjacent keyword values swapped
  name      a call of a module function replaced by one with the same parameters
            (`_exclusive(s, pool, p, r)` -> `_holds(s, pool, p, r)`)

A mutant's key is `function:op:original->mutated` (with `#n` when the same text occurs
again in that function): it stays the same when unrelated lines move.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The default test selection of each target: the tests that exercise it, fastest killers
#: first (pytest runs with -x, so a killed mutant costs only the tests before the first failure).
DEFAULT_TESTS: dict[str, list[str]] = {
    "ownership/kernel.py": [
        "tests/language/test_kernel_mutants.py",
        "tests/language/test_kernel_properties.py",
        "tests/language/test_shared_pools.py",
        "tests/language/test_spec_language.py",
        "tests/engines/test_explicit_engine.py",
        "tests/shipped/test_spec_vllm_block_pool.py",
        "tests/shipped/test_spec_vllm_nixl.py",
        "tests/shipped/test_spec_vllm_nixl_load_failure.py",
        "tests/shipped/test_sglang_pd.py",
        "tests/shipped/test_spec_sglang_disagg.py",
        "tests/engines/test_batch.py",
    ],
    "ownership/engines/symmetry.py": [
        "tests/engines/test_symmetry.py",
        "tests/engines/test_batch.py",
    ],
}

#: Calls whose removal is reported as `call` (the kernel's judgements and guards).
_JUDGING_CALLS = {"_flag", "require", "_check"}

_SKIP_DIRS = {".git", ".venv", "__pycache__", ".hypothesis", ".ownership", ".pytest_cache",
              ".mypy_cache", ".ruff_cache", "artifacts", "build", "dist"}


# -- mutants -------------------------------------------------------------------------------------


@dataclass
class Mutant:
    """One change to one target: replace bytes [start, end) of the source by `text`."""

    target: str
    key: str
    op: str
    line: int
    end_line: int
    function: str
    original: str
    mutated: str
    start: int
    end: int
    text: str

    def apply(self, source: bytes) -> bytes:
        return source[:self.start] + self.text.encode() + source[self.end:]


def _compact(text: str, limit: int = 70) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Generator(ast.NodeVisitor):
    """Walks a module and records every mutation point (see the module docstring)."""

    def __init__(self, target: str, source: bytes) -> None:
        self.target = target
        self.source = source
        self.tree = ast.parse(source)
        starts = [0]
        for line in source.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        self.line_starts = starts
        self.out: list[Mutant] = []
        self.scope: list[str] = []
        self.returns: list[ast.expr | None] = []
        # module-level functions by parameter list, for the `name` operator
        # (private helpers with the same parameters and return annotation are interchangeable
        # to the type checker, so a slip from one to the other is a plausible bug)
        self.by_params: dict[tuple[str, ...], list[str]] = {}
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("_"):
                params = tuple(a.arg for a in node.args.args)
                params += (ast.unparse(node.returns) if node.returns else "",)
                self.by_params.setdefault(params, []).append(node.name)
        self.params_of = {name: p for p, names in self.by_params.items() for name in names}

    # positions
    def _span(self, node: ast.AST) -> tuple[int, int]:
        start = self.line_starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.line_starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    def _text(self, node: ast.AST) -> str:
        a, b = self._span(node)
        return self.source[a:b].decode()

    def _add(self, op: str, node: ast.AST, new: ast.AST | str, *, statement: bool = False) -> None:
        start, end = self._span(node)
        if isinstance(new, str):
            text = new
        else:
            text = ast.unparse(ast.fix_missing_locations(new))
            if not statement and not isinstance(new, ast.Name | ast.Constant | ast.Call | ast.Attribute
                                                | ast.Subscript | ast.List | ast.Tuple):
                text = f"({text})"
        original = self.source[start:end].decode()
        if _compact(original, 10_000) == _compact(text, 10_000):
            return
        self.out.append(Mutant(
            target=self.target, key="", op=op, line=node.lineno,  # type: ignore[attr-defined]
            end_line=node.end_lineno,  # type: ignore[attr-defined]
            function=".".join(self.scope) or "<module>", original=_compact(original), mutated=_compact(text),
            start=start, end=end, text=text,
        ))

    # scopes and what is not mutated
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.scope.append(node.name)
        self.returns.append(node.returns)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        for d in node.args.defaults + node.args.kw_defaults:
            if d is not None:
                self.visit(d)
        self._block(body)
        self.returns.pop()
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef):
                self.visit(stmt)
        self.scope.pop()

    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
                self.visit(stmt)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return  # messages: positions inside f-strings are not reliable, and text is not mutated

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def _block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self._statement_removed(stmt)
            self.visit(stmt)

    def _statement_removed(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Pass | ast.FunctionDef | ast.ClassDef | ast.Global | ast.Nonlocal):
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return
        op = "stmt"
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            f = stmt.value.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            op = "call" if name in _JUDGING_CALLS or name.startswith("_") else "stmt"
        self._add(op, stmt, "pass", statement=True)

    # statements with blocks
    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self._block(node.body)
        self._block(node.orelse)

    def visit_For(self, node: ast.For) -> None:
        self._loop(node.iter)
        self.visit(node.iter)
        self._block(node.body)
        self._block(node.orelse)

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self._block(node.body)
        self._block(node.orelse)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            self.visit(item.context_expr)
        self._block(node.body)

    def visit_Try(self, node: ast.Try) -> None:
        self._block(node.body)
        for h in node.handlers:
            self._block(h.body)
        self._block(node.orelse)
        self._block(node.finalbody)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._loop(node.iter)
        self.visit(node.iter)
        for cond in node.ifs:
            self.visit(cond)

    def _loop(self, it: ast.expr) -> None:
        for op_text in ("[:1]", "[1:]"):
            self._add("loop", it, f"list({self._text(it)}){op_text}")

    # expressions
    def visit_Compare(self, node: ast.Compare) -> None:
        swap = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
                ast.GtE: ast.Gt, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
        for i, o in enumerate(node.ops):
            new = ast.Compare(left=node.left, ops=list(node.ops), comparators=node.comparators)
            new.ops[i] = swap[type(o)]()
            self._add("cmp", node, new)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        swap = {ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.Add: ast.Sub, ast.Sub: ast.Add}
        if type(node.op) in swap:
            self._add("bool", node, ast.BinOp(left=node.left, op=swap[type(node.op)](), right=node.right))
            self._add("operand", node, self._text(node.left) if _atomic(node.left) else f"({self._text(node.left)})")
            self._add("operand", node, self._text(node.right) if _atomic(node.right) else f"({self._text(node.right)})")
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self._add("bool", node, ast.BoolOp(op=other, values=node.values))
        for i in range(len(node.values)):
            rest = node.values[:i] + node.values[i + 1:]
            self._add("operand", node, rest[0] if len(rest) == 1 else ast.BoolOp(op=node.op, values=rest))
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Invert | ast.Not | ast.USub):
            inner = self._text(node.operand)
            self._add("invert", node, inner if _atomic(node.operand) else f"({inner})")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if isinstance(v, bool):
            self._add("const", node, ast.Constant(not v))
        elif isinstance(v, int):
            for w in (v + 1, v - 1):
                self._add("const", node, ast.Constant(w) if w >= 0 else f"({w})")

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._add("ite", node, ast.IfExp(test=node.test, body=node.orelse, orelse=node.body))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name == "If" and len(node.args) == 3:
            self._add("ite", node, ast.Call(func=f, args=[node.args[0], node.args[2], node.args[1]],
                                            keywords=node.keywords))
        elif len(node.args) >= 2:
            for i in range(len(node.args) - 1):
                a, b = node.args[i], node.args[i + 1]
                if isinstance(a, ast.Starred) or isinstance(b, ast.Starred) or ast.dump(a) == ast.dump(b) \
                        or any(_fixed_argument(x) for x in (a, b)):
                    continue
                args = list(node.args)
                args[i], args[i + 1] = b, a
                self._add("args", node, ast.Call(func=f, args=args, keywords=node.keywords))
        kws = [k for k in node.keywords if k.arg is not None]
        for i in range(len(kws) - 1):
            a, b = kws[i], kws[i + 1]
            if ast.dump(a.value) == ast.dump(b.value):
                continue
            new_kws = [ast.keyword(arg=k.arg, value=k.value) for k in node.keywords]
            ia, ib = node.keywords.index(a), node.keywords.index(b)
            new_kws[ia].value, new_kws[ib].value = b.value, a.value
            self._add("args", node, ast.Call(func=f, args=node.args, keywords=new_kws))
        if isinstance(f, ast.Name) and f.id in self.params_of:
            for other in self.by_params[self.params_of[f.id]]:
                if other != f.id:
                    self._add("name", f, other)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        v = node.value
        if v is None or (isinstance(v, ast.Constant) and v.value is None):
            return
        ann = ast.unparse(self.returns[-1]) if self.returns and self.returns[-1] is not None else "Any"
        if "None" in ann:
            choices = ["None"]
        elif ann == "bool" or isinstance(v, ast.Compare | ast.BoolOp) or \
                (isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not)):
            choices = ["True", "False"]
        elif ann.startswith("list"):
            choices = ["[]"]
        elif ann.startswith("str"):
            choices = ["''"]
        elif ann.startswith("tuple") or ann.startswith("dict"):
            choices = []
        else:
            choices = ["0"]
        for c in choices:
            self._add("return", v, c)
        self.visit(v)


def _fixed_argument(node: ast.expr) -> bool:
    """An argument that no swap can sensibly move: the state view `s`, a `self`, or text
    (an operation's name for its messages); swapping it only makes every call crash."""
    return (isinstance(node, ast.Name) and node.id in ("s", "self")) or \
        (isinstance(node, ast.Constant) and isinstance(node.value, str)) or isinstance(node, ast.JoinedStr)


def _atomic(node: ast.expr) -> bool:
    return isinstance(node, ast.Name | ast.Constant | ast.Call | ast.Attribute | ast.Subscript)


#: copy the working tree as it is (--worktree) instead of the last commit
FROM_WORKTREE = False


def source_of(target: str) -> bytes:
    """The target's text: at HEAD (what the copies hold), or in the working tree."""
    if FROM_WORKTREE:
        return (ROOT / target).read_bytes()
    return subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:{target}"], capture_output=True,
                          check=True).stdout


def mutants_of(target: str) -> list[Mutant]:
    """Every mutant of one target (a path relative to the repository root), with keys."""
    source = source_of(target)
    gen = _Generator(target, source)
    gen.visit(gen.tree)
    seen: set[str] = set()
    out: list[Mutant] = []
    counts: dict[str, int] = {}
    original_dump = ast.dump(gen.tree)
    for m in sorted(gen.out, key=lambda m: (m.start, m.end, m.op, m.text)):
        new = m.apply(source)
        try:
            dump = ast.dump(ast.parse(new))
        except SyntaxError:
            continue
        if dump == original_dump or dump in seen:
            continue  # the same program as the original, or as an earlier mutant
        seen.add(dump)
        base = f"{m.function}:{m.op}:{m.original}->{m.mutated}"
        counts[base] = counts.get(base, 0) + 1
        m.key = base if counts[base] == 1 else f"{base}#{counts[base]}"
        out.append(m)
    return out


def load_equivalent() -> dict[str, dict[str, str]]:
    """The judged equivalent mutants: target -> {key: why no verdict can change}."""
    path = Path(__file__).with_name("equivalent.py")
    spec = importlib.util.spec_from_file_location("_mutation_equivalent", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {t: dict(v) for t, v in mod.EQUIVALENT.items()}


# -- running -------------------------------------------------------------------------------------


@dataclass
class Outcome:
    key: str
    status: str            # killed, timeout, survived, equivalent
    seconds: float
    detail: str = ""       # the first failing test, or why
    mutant: dict = field(default_factory=dict)


def _copy_tree(src: Path, dst: Path) -> None:
    def ignore(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if n in _SKIP_DIRS or n.endswith(".egg-info")]

    if dst.exists():
        shutil.rmtree(dst)
    if FROM_WORKTREE:
        shutil.copytree(src, dst, ignore=ignore, symlinks=True)
    else:  # the last commit: other developers' edits in progress stay out
        dst.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(src), "archive", "HEAD"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dst)], input=archive, check=True)
    # ownership.specs is the top-level specs/ (pyproject's package-dir): the editable install
    # maps it to the original checkout, so give the copy its own.
    link = dst / "ownership" / "specs"
    if not link.exists():
        link.symlink_to("../specs", target_is_directory=True)


def _env(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(copy), str(copy / "tests" / "mutation")])
    env["CI"] = "1"  # derandomised Hypothesis profile, no example database (docs/testing.md)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _check_copy(copy: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import ownership, ownership.kernel, ownership.specs;"
         " print(ownership.__file__); print(ownership.kernel.__file__); print(list(ownership.specs.__path__)[0])"],
        cwd=copy, env=_env(copy), capture_output=True, text=True, check=True,
    ).stdout.split()
    for f in out:
        if not os.path.abspath(f).startswith(str(copy) + os.sep):
            raise SystemExit(f"setup: the copy {copy} imports {f} instead of its own ownership package")


_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)", re.M)
_PYTEST = ["-x", "-q", "-p", "no:cacheprovider", "--no-header", "-rfE"]


class _Server:
    """A process in one copy that has imported pytest and the heavy libraries (not ownership)
    and forks a fresh child per run: each mutant pays for importing ownership only."""

    def __init__(self, copy: Path, targets: list[str]) -> None:
        self.copy = copy
        self.targets = targets
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(copy), *targets], cwd=copy,
                                     env=_env(copy), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, args: list[str], timeout: float, env: dict[str, str] | None = None) -> tuple[str, float, str]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"args": args, "timeout": timeout, "env": env or {}}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"setup: the test server in {self.copy} stopped")
        got = json.loads(line)
        return got["status"], got["seconds"], got["detail"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _serve(copy: Path, targets: list[str]) -> None:
    """The server side of _Server: one JSON request per line on stdin, one answer per line."""
    import numpy  # noqa: F401  (imported once here, inherited by every child)
    import pytest

    # (not hypothesis: pytest loads it as a plugin and must import it itself, to rewrite it)
    for mod in ("click", "click.testing", "networkx", "rich.console", "rich.table", "_pytest.python",
                "_pytest.assertion.rewrite", "_pytest.pytester"):
        try:
            __import__(mod)
        except ImportError:
            pass
    assert not any(m == "ownership" or m.startswith("ownership.") for m in sys.modules), "ownership preloaded"
    out = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        for t in targets:
            # a mutant may have the same size and mtime second as the previous one: never
            # reuse the compiled code of a target
            for pyc in (copy / t).parent.glob(f"__pycache__/{Path(t).stem}.*.pyc"):
                pyc.unlink()
        with tempfile.NamedTemporaryFile("w+b", suffix=".log", delete=False) as log:
            log_name = log.name
        out.flush()
        sys.stderr.flush()
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: a fresh pytest run on the copy as it is now
            try:
                os.setsid()
                fd = os.open(log_name, os.O_WRONLY | os.O_TRUNC)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.environ.update(req["env"])
                os.chdir(copy)
                rc = pytest.main(req["args"])
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(int(rc))
            except BaseException:
                import traceback

                traceback.print_exc()
                sys.stderr.flush()
                os._exit(99)
        status, detail = "", ""
        while True:
            got, code = os.waitpid(pid, os.WNOHANG)
            if got:
                break
            if time.monotonic() - t0 > req["timeout"]:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(pid, 0)
                status, detail = "timeout", f"no result within {req['timeout']:.0f} s"
                break
            time.sleep(0.02)
        seconds = time.monotonic() - t0
        with open(log_name, errors="replace") as f:
            text = f.read()
        os.unlink(log_name)
        if not status:
            rc = os.waitstatus_to_exitcode(code)
            if rc == 0:
                status = "passed"
            else:
                status = "failed"
                m = _FAILED.search(text)
                if m:
                    detail = m.group(2)
                else:
                    tail = [x for x in text.strip().splitlines() if x.strip()][-1:] or [""]
                    if os.environ.get("MUTATION_DEBUG"):
                        sys.stderr.write(text)
                    detail = f"exit {rc}: {tail[0][:160]}"
        out.write(json.dumps({"status": status, "seconds": seconds, "detail": detail}) + "\n")
        out.flush()


def _covering(m: Mutant, coverage: dict[str, dict], copy: Path, selection: tuple[str, ...]) -> list[str]:
    """The tests that run a line of the mutant: those of the selection's first file (the
    target's own mutation tests) first, then the others, fastest first."""
    path = str(copy / m.target)
    lines = set(range(m.line, m.end_line + 1))
    own = selection[0].split("::")[0] if selection else ""
    hits = [(not nodeid.startswith(own), c["seconds"], nodeid) for nodeid, c in coverage.items()
            if lines & set(c["lines"].get(path, ()))]
    return [nodeid for *_, nodeid in sorted(hits)]


def run(targets: list[str], tests: list[str] | None, jobs: int, workdir: Path, timeout: float | None,
        only: list[str], report_path: Path | None, resume: Path | None = None) -> int:
    equivalent = load_equivalent()
    kept: list[Outcome] = []
    if resume is not None:
        # a mutant killed before stays killed (the tests only grow); every other one runs again
        for o in json.loads(resume.read_text()):
            if o["status"] in ("killed", "timeout") and o["mutant"]["target"] in targets:
                kept.append(Outcome(**o))
    done_keys = {(o.mutant["target"], o.key) for o in kept}
    plan: list[tuple[Mutant, tuple[str, ...]]] = []
    for t in targets:
        selection = tuple(tests or DEFAULT_TESTS[t])
        plan += [(m, selection) for m in mutants_of(t) if (not only or any(fnmatch.fnmatchcase(m.key, g) for g in only))
                 and (t, m.key) not in done_keys]
    if resume is not None:
        live = {(t, m.key) for t in targets for m in mutants_of(t)}
        kept = [o for o in kept if (o.mutant["target"], o.key) in live]
        print(f"resuming {resume}: {len(kept)} mutants killed before, {len(plan)} to run", flush=True)
    if not plan and not kept:
        print("no mutants selected")
        return 2
    workdir = workdir.resolve()
    if str(workdir).startswith(str(ROOT) + os.sep) or workdir == ROOT:
        raise SystemExit(f"setup: --workdir {workdir} is inside the repository; mutants are never written there")
    copies = [workdir / f"w{i}" for i in range(jobs)]
    print(f"copying {ROOT} to {', '.join(map(str, copies))}", flush=True)
    for c in copies:
        _copy_tree(ROOT, c)
        _check_copy(c)
    servers = [_Server(c, targets) for c in copies]
    originals = {t: source_of(t) for t in targets}

    # the unmutated selections must pass in the copy; they give which tests run which lines
    coverage: dict[tuple[str, ...], dict[str, dict]] = {}
    for sel in sorted({s for _, s in plan}):
        out = workdir / "coverage.json"
        env = {"MUTATION_TARGETS": os.pathsep.join(str(copies[0] / t) for t in targets),
               "MUTATION_COVERAGE": str(out)}
        status, seconds, detail = servers[0].run([*_PYTEST, "-p", "_coverage_plugin", *sel], 7200, env)
        if status != "passed":
            raise SystemExit(f"setup: the unmutated tests fail in the copy ({detail}): {' '.join(sel)}")
        cov = json.loads(out.read_text())
        # every copy has the same layout: key the lines by the target path in copy 0
        coverage[sel] = cov
        print(f"unmutated: {len(cov)} tests pass in {seconds:.1f} s (traced): {' '.join(sel)}", flush=True)

    free = list(range(jobs))
    lock = threading.Lock()
    done = [0]

    def one(item: tuple[Mutant, tuple[str, ...]]) -> Outcome:
        m, sel = item
        chosen = _covering(m, coverage[sel], copies[0], sel)
        if not chosen:
            status, seconds, detail = "passed", 0.0, "no selected test runs this line"
        else:
            with lock:
                k = free.pop()
            try:
                (copies[k] / m.target).write_bytes(m.apply(originals[m.target]))
                budget = sum(coverage[sel][n]["seconds"] for n in chosen)
                limit = timeout or max(60.0, 5 * budget + 20)
                status, seconds, detail = servers[k].run([*_PYTEST, *chosen], limit)
            finally:
                (copies[k] / m.target).write_bytes(originals[m.target])
                with lock:
                    free.append(k)
        status = {"passed": "survived", "failed": "killed"}.get(status, status)
        if status == "survived" and m.key in equivalent.get(m.target, {}):
            status = "equivalent"
        with lock:
            done[0] += 1
            print(f"[{done[0]}/{len(plan)}] {status:10} {m.target}:{m.line} {m.key}  ({len(chosen)} tests) {detail}",
                  flush=True)
        return Outcome(m.key, status, seconds, detail, asdict(m))

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        outcomes = kept + list(pool.map(one, plan))
    elapsed = time.monotonic() - t0
    for srv in servers:
        srv.close()
    for c in copies:
        shutil.rmtree(c, ignore_errors=True)

    if report_path:
        report_path.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    print(f"{len(outcomes)} mutants in {elapsed / 60:.1f} min with {jobs} jobs")
    return summarise(targets, outcomes, equivalent, check_stale=not only)


def summarise(targets: list[str], outcomes: list[Outcome], equivalent: dict[str, dict[str, str]],
              check_stale: bool = True) -> int:
    """Print the numbers per target (survivors judged equivalent in equivalent.py count apart);
    0 when no mutant survives."""
    for o in outcomes:
        if o.status in ("survived", "equivalent"):
            o.status = "equivalent" if o.key in equivalent.get(o.mutant["target"], {}) else "survived"
    print()
    code = 0
    for t in targets:
        mine = [o for o in outcomes if o.mutant["target"] == t]
        if not mine:
            continue
        by = {s: [o for o in mine if o.status == s] for s in ("killed", "timeout", "survived", "equivalent")}
        judged = len(mine) - len(by["equivalent"])
        killed = len(by["killed"]) + len(by["timeout"])
        score = 100.0 * killed / judged if judged else 100.0
        print(f"{t}: {len(mine)} mutants, {killed} killed ({len(by['timeout'])} by timeout),"
              f" {len(by['survived'])} survived, {len(by['equivalent'])} equivalent;"
              f" score {killed}/{judged} = {score:.1f}% (killed / not equivalent)")
        for o in by["timeout"]:
            print(f"  timeout   line {o.mutant['line']}: {o.key}")
        for o in by["survived"]:
            print(f"  SURVIVED  line {o.mutant['line']}: {o.key}  {o.detail}")
        for o in by["equivalent"]:
            print(f"  equivalent line {o.mutant['line']}: {o.key}\n      {equivalent[t][o.key]}")
        if by["survived"]:
            code = 1
    if check_stale:
        for t in targets:
            stale = sorted(set(equivalent.get(t, {})) - {m.key for m in mutants_of(t)})
            if stale:
                print(f"note: entries of equivalent.py for {t} match no mutant any more: {stale}")
            killed = sorted(o.key for o in outcomes if o.mutant["target"] == t
                            and o.status in ("killed", "timeout") and o.key in equivalent.get(t, {}))
            if killed:
                print(f"note: entries of equivalent.py for {t} are killed by the tests: {killed}")
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        _serve(Path(argv[1]), argv[2:])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("targets", nargs="*", default=list(DEFAULT_TESTS), help="modules to mutate (default: both)")
    p.add_argument("--tests", nargs="+", help="the test selection (default: each target's own, see DEFAULT_TESTS)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants run in parallel (default: cores)")
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "mutation-work",
                   help="where the private copies go (outside the repository)")
    p.add_argument("--timeout", type=float, help="seconds per mutant (default: 5x its tests' unmutated time + 20, at least 60)")
    p.add_argument("--only", action="append", default=[], help="only mutants whose key matches this glob")
    p.add_argument("--list", action="store_true", help="list the mutants and stop")
    p.add_argument("--show", metavar="KEY", help="print one mutant's changed line and stop")
    p.add_argument("--report", type=Path, help="write every outcome as JSON here")
    p.add_argument("--worktree", action="store_true",
                   help="mutate and test the working tree as it is (default: the last commit, HEAD)")
    p.add_argument("--summary", type=Path, metavar="REPORT",
                   help="print the numbers of an earlier report (with the current equivalent.py) and stop")
    p.add_argument("--resume", type=Path, metavar="REPORT",
                   help="keep the mutants killed in this earlier report, run the others again, and update it")
    a = p.parse_args(argv)
    global FROM_WORKTREE
    FROM_WORKTREE = a.worktree
    for t in a.targets:
        if t not in DEFAULT_TESTS and not a.tests:
            p.error(f"{t}: no default test selection; give --tests")
        if not (ROOT / t).is_file():
            p.error(f"{t}: no such file under {ROOT}")
    if a.summary:
        outcomes = [Outcome(**o) for o in json.loads(a.summary.read_text())]
        return summarise(sorted({o.mutant["target"] for o in outcomes}), outcomes, load_equivalent())
    if a.list or a.show:
        for t in a.targets:
            for m in mutants_of(t):
                if a.show and m.key != a.show:
                    continue
                if a.only and not any(fnmatch.fnmatchcase(m.key, g) for g in a.only):
                    continue
                print(f"{t}:{m.line}  {m.key}")
                if a.show:
                    src = source_of(t)
                    print("\n".join(f"- {x}" for x in src.decode().splitlines()[m.line - 1:m.end_line]))
                    print("\n".join(f"+ {x}" for x in m.apply(src).decode().splitlines()[m.line - 1:m.end_line]))
        return 0
    if a.jobs < 1:
        p.error("--jobs must be 1 or more")
    return run(a.targets, a.tests, a.jobs, a.workdir, a.timeout, a.only, a.report or a.resume, a.resume)


if __name__ == "__main__":
    sys.exit(main())
