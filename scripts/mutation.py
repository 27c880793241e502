"""`make mutation`: mutmut over chosen source paths with their fast tests, then the scores.

    .venv/bin/python scripts/mutation.py            # every group of GROUPS, one after another
    .venv/bin/python scripts/mutation.py --group bundle --group erasure   # some of them
    .venv/bin/python scripts/mutation.py --mutate src/wopeval/evals --tests tests/unit/evals

With no `--mutate`, each group of `GROUPS` (source paths and the fast tests that
exercise them) is one mutmut run; the table at the end scores them all. The groups
whose tests start a host keep to its SQLite store (`-m "not postgres"`): the code
under mutation is the same on both stores, and each mutant starts the host afresh.

mutmut reads its settings only from a `[tool.mutmut]` table in the working
directory's pyproject.toml, so each run works in a fresh directory under
`.mutation/`: a copy of `src/`, `tests/`, `docs/` (some tests check the docs) and
pyproject.toml with that table generated from the group. The repository's own
files never change. mutmut mutates only the given paths and runs only the given
tests. Package `__init__.py` files are left alone:
they only re-export, and the names mutmut's trampolines add to a module would
show up in the `__all__` checks of those fronts.

The score of a path is killed ÷ (mutants − equivalent ones). A mutant that no
selected test reaches counts as surviving. An equivalent mutant changes the code
but not what it does (a default argument spelled out, a buffer slot that is
always overwritten); such mutants are listed, each with its reason, in
scripts/mutation-equivalents.toml by function and mutated line. A listed mutant
that is no longer generated or is now killed is reported as stale, so the list
only holds what is true of the code today.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = Path(sys.executable).with_name("mutmut")
EQUIVALENTS = ROOT / "scripts" / "mutation-equivalents.toml"
KILLED = frozenset({"killed", "timeout", "segfault", "caught by type check"})
"""mutmut statuses where a test (or the checker) noticed the mutant."""
NOT_KILLED = frozenset({"survived", "no tests", "suspicious"})
_NAME = re.compile(r"^(?P<function>(?P<module>[\w.]+?)\.x[_ǁ].*)__mutmut_\d+$")
_MODULE = re.compile(r"^(?P<module>[\w.]+?)\.x[_ǁ]")


@dataclass(frozen=True)
class Group:
    """Source paths mutated in one mutmut run, and the fast tests run against each mutant."""

    name: str
    mutate: tuple[str, ...]
    tests: tuple[str, ...]
    markers: str | None = None
    """A pytest `-m` expression the tests are narrowed by (None: all of them)."""


_SQLITE_ONLY = "not postgres"

GROUPS = (
    Group("evals", ("src/wopeval/evals",), ("tests/unit/evals",)),
    Group(
        "engine",
        ("src/wopeval/engine/runlog/runlog.py", "src/wopeval/engine/recording/boundary.py"),
        ("tests/unit/engine",),
    ),
    # The MCP endpoint and the model proxy share the invocation token check; their fast tests
    # drive both endpoints in process (tests/unit/api/test_invocation_endpoints.py).
    Group(
        "mcp",
        ("src/wopeval/api/routes/mcp.py", "src/wopeval/api/invocation_token.py"),
        ("tests/unit/api",),
        _SQLITE_ONLY,
    ),
    # The wire APIs it drives (models/) are left out: 1,747 mutants, hours on two cores.
    Group(
        "model-proxy",
        ("src/wopeval/api/routes/model_proxy.py",),
        ("tests/unit/api",),
        _SQLITE_ONLY,
    ),
    Group(
        "bundle",
        ("src/wopeval/recordings/_bundles.py", "src/wopeval/store/bundle.py"),
        ("tests/engine/test_bundles.py", "tests/engine/test_hostile_bundles.py"),
        _SQLITE_ONLY,
    ),
    Group(
        "erasure",
        ("src/wopeval/engine/runs/erasure.py",),
        ("tests/unit/engine/test_erasure_rule.py", "tests/engine/test_erasure_cascade.py"),
        _SQLITE_ONLY,
    ),
)
"""What `make mutation` mutates by default; each target is scored on its own."""


@dataclass(frozen=True)
class Equivalent:
    function: str
    """mutmut's name of the function, e.g. `wopeval.evals._verdict.x_holm_adjust`."""
    mutated: str
    """The mutated line as the mutant reads it, stripped."""
    why: str


@dataclass
class Score:
    path: str
    statuses: Counter[str] = field(default_factory=Counter)
    survivors: list[tuple[str, str]] = field(default_factory=list)
    """(mutant, its mutated line) of each behavioural mutant that was not killed."""
    equivalent: int = 0

    @property
    def behavioural(self) -> int:
        return sum(self.statuses.values()) - self.equivalent

    @property
    def killed(self) -> int:
        return sum(n for status, n in self.statuses.items() if status in KILLED)

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.behavioural if self.behavioural else 100.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--group",
        action="append",
        choices=[g.name for g in GROUPS],
        help="run only this group of GROUPS (repeatable; default: every group)",
    )
    parser.add_argument("--mutate", nargs="+", help="files or directories (default: GROUPS)")
    parser.add_argument("--tests", nargs="+", help="pytest selections (with --mutate)")
    parser.add_argument("--workdir", type=Path, default=ROOT / ".mutation")
    parser.add_argument("--jobs", type=int, default=None, help="mutmut workers (default: CPUs)")
    args = parser.parse_args()
    if (args.mutate is None) != (args.tests is None):
        parser.error("--mutate and --tests go together")
    if args.mutate is not None and args.group:
        parser.error("--group chooses among GROUPS; --mutate replaces them")
    groups = tuple(g for g in GROUPS if not args.group or g.name in args.group)
    if args.mutate is not None:
        groups = (Group("selected", tuple(args.mutate), tuple(args.tests)),)
    if args.workdir.exists():
        shutil.rmtree(args.workdir)
    equivalents = _equivalents()
    scores: list[tuple[Score, list[Score]]] = []
    stale: list[Equivalent] = []
    for group in groups:
        workdir = args.workdir / group.name
        targets = [_relative(p) for p in group.mutate]
        tests = [_relative(t) for t in group.tests]
        _prepare(workdir, targets, tests + (["-m", group.markers] if group.markers else []))
        log = workdir / "mutmut.log"
        print(f"mutation: mutmut over {', '.join(targets)} (log: {log})", flush=True)
        command = [str(MUTMUT), "run"] + ([f"--max-children={args.jobs}"] if args.jobs else [])
        with log.open("w") as out:
            done = subprocess.run(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            print(f"mutation: mutmut failed (exit {done.returncode}); see {log}", file=sys.stderr)
            return done.returncode
        group_scores, group_stale = _score(workdir, targets, equivalents)
        scores.extend(group_scores)
        stale.extend(group_stale)
    _report(scores, stale, args.workdir / "report.json")
    return 0


def _relative(path: str) -> str:
    resolved = (ROOT / path).resolve()
    if not resolved.exists() or not resolved.is_relative_to(ROOT):
        raise SystemExit(f"mutation: {path} is not a path in the repository")
    return resolved.relative_to(ROOT).as_posix()


def _prepare(workdir: Path, targets: list[str], selection: list[str]) -> None:
    """A fresh copy of the sources and tests, with the `[tool.mutmut]` table for this run;
    `selection`: pytest's arguments choosing the tests."""
    workdir.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("src", "tests", "docs"):
        shutil.copytree(ROOT / name, workdir / name, ignore=ignore)
    only = [f"{t}/*" if (ROOT / t).is_dir() else t for t in targets]
    fronts = sorted(
        p.relative_to(ROOT).as_posix()
        for t in targets
        if (ROOT / t).is_dir()
        for p in (ROOT / t).rglob("__init__.py")
    )
    table = {
        "source_paths": ["src"],
        # mutmut runs the tests in its own copy (`mutants/`); some tests check the docs.
        "also_copy": ["docs"],
        "only_mutate": only,
        "do_not_mutate": fronts,
        "pytest_add_cli_args_test_selection": selection,
        # The Hypothesis profile of tests/conftest.py: the same examples on every run.
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "--hypothesis-profile=mutation"],
        "use_git_change_detection": False,
    }
    lines = ["", "[tool.mutmut]"] + [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (workdir / "pyproject.toml").write_text(text + "\n".join(lines) + "\n", encoding="utf-8")


def _equivalents() -> list[Equivalent]:
    document = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    return [Equivalent(**entry) for entry in document.get("equivalent", [])]


def _mutmut(workdir: Path, *args: str) -> str:
    done = subprocess.run(
        [str(MUTMUT), *args], cwd=workdir, capture_output=True, text=True, check=True
    )
    return done.stdout


def _mutated_line(workdir: Path, mutant: str) -> str:
    """The `+` lines of the mutant's diff, stripped and joined: what the mutant reads."""
    diff = _mutmut(workdir, "show", mutant).splitlines()
    added = [line[1:].strip() for line in diff if line[:1] == "+" and line[:3] != "+++"]
    return "\n".join(added)


def _score(
    workdir: Path, targets: list[str], equivalents: list[Equivalent]
) -> tuple[list[tuple[Score, list[Score]]], list[Equivalent]]:
    """Each target's score with its files' scores; and the equivalents nothing matched."""
    files: dict[str, Score] = {}
    unused = [e for e in equivalents if any(_within(_file_of_function(e), t) for t in targets)]
    for line in _mutmut(workdir, "results", "--all", "true").splitlines():
        mutant, sep, status = line.strip().partition(": ")
        match = _NAME.match(mutant)
        if not sep or match is None:
            continue
        path = _file_of(match["module"])
        score = files.setdefault(path, Score(path))
        score.statuses[status] += 1
        if status in KILLED:
            continue
        if status not in NOT_KILLED:
            raise SystemExit(f"mutation: {mutant} was left {status!r}; rerun `make mutation`")
        mutated = _mutated_line(workdir, mutant)
        found = next(
            (e for e in unused if e.function == match["function"] and e.mutated == mutated), None
        )
        if found is None:
            score.survivors.append((mutant, mutated))
        else:
            unused.remove(found)
            score.equivalent += 1
    scores = []
    for target in targets:
        under = [files[path] for path in sorted(files) if _within(path, target)]
        total = Score(target, equivalent=sum(f.equivalent for f in under))
        for f in under:
            total.statuses.update(f.statuses)
            total.survivors.extend(f.survivors)
        scores.append((total, under))
    return scores, unused


def _file_of(module: str) -> str:
    stem = "src/" + module.replace(".", "/")
    return f"{stem}/__init__.py" if (ROOT / stem).is_dir() else f"{stem}.py"


def _file_of_function(equivalent: Equivalent) -> str:
    match = _MODULE.match(equivalent.function)
    if match is None:
        raise SystemExit(f"mutation: {equivalent.function!r} is not a mutmut function name")
    return _file_of(match["module"])


def _within(path: str, target: str) -> bool:
    return path == target or path.startswith(target.rstrip("/") + "/")


def _row(label: str, s: Score) -> str:
    survived = s.behavioural - s.killed
    return (
        f"{label:<44} {sum(s.statuses.values()):>8} {s.equivalent:>7} {s.killed:>7} "
        f"{survived:>9} {s.percent:>6.1f}%"
    )


def _report(scores: list[tuple[Score, list[Score]]], stale: list[Equivalent], path: Path) -> None:
    """The table (each target, its files indented), the survivors, the stale entries."""
    print()
    print(f"{'path':<44} {'mutants':>8} {'equiv.':>7} {'killed':>7} {'survived':>9} {'score':>7}")
    for total, under in scores:
        print(_row(total.path, total))
        for f in under if len(under) > 1 else []:
            print(_row("  " + f.path, f))
    for total, _ in scores:
        for mutant, mutated in total.survivors:
            print(f"  survived  {mutant}: {mutated}")
    for e in stale:
        print(f"  stale equivalent (no surviving mutant matches): {e.function}: {e.mutated}")
    report = {
        "paths": [
            {"path": s.path, "statuses": dict(s.statuses), "equivalent": s.equivalent,
             "killed": s.killed, "behavioural": s.behavioural, "score": round(s.percent, 2),
             "survivors": [{"mutant": m, "mutated": line} for m, line in s.survivors]}
            for total, under in scores
            for s in [total, *under]
        ],
        "staleEquivalents": [vars(e) for e in stale],
    }  # fmt: skip
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nmutation: report in {path}")


if __name__ == "__main__":
    sys.exit(main())
