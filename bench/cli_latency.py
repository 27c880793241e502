"""CLI latency: how long a user waits for `wopeval` commands, beside `python -c pass`.

Each command is run `--runs` times in a fresh process, one after the other, and
timed from the spawn to the exit (wall time, `time.perf_counter`); the median and
the 90th percentile are printed beside the anchor, the same interpreter doing
nothing (`python -c pass`), measured in the same run just before. The median CPU
time of the command's process (user + system, from `getrusage`) is printed too: on
a busy machine the wall time waits for the other processes, its CPU time much less:

- `wopeval --version` and `wopeval --help`: start-up alone (issue 28: ≤ 0.3 s);
- `wopeval runs list --data-dir D` with no `serve` running: the command starts an
  embedded host on D (a database already at the newest revision), lists, and
  stops it. Timed twice: to the moment its host is ready (≤ 0.8 s; the command
  logs `embedded host ready at URL` on the `wopeval.embedded` logger, which the
  bench switches on and waits for on stderr), and to its exit. Beside the first,
  the floor under it: `bare_host.py`, the same frameworks (FastAPI, SQLAlchemy,
  uvicorn, httpx) serving one route with no wopeval code, timed to its own
  readiness line;
- `wopeval runs list --url URL --api-key KEY` against a `wopeval serve` this bench
  starts on another data directory, and `wopeval runs list --data-dir D` naming
  that `serve`'s directory, which finds the host through it (≤ 0.5 s).

Each command must exit 0, or the bench stops with its output. Run
`python bench/cli_latency.py --help` for the options; bench/README.md has the
figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from reporting import finish

PYTHON = sys.executable
WOPEVAL = str(Path(sys.executable).with_name("wopeval"))
BARE_HOST = str(Path(__file__).with_name("bare_host.py"))
LOGGED_WOPEVAL = [
    PYTHON,
    "-c",
    # `wopeval` as its script runs it, with the embedded host's readiness line switched on.
    "import logging, sys; ready = logging.getLogger('wopeval.embedded');"
    " ready.addHandler(logging.StreamHandler()); ready.setLevel(logging.INFO);"
    " sys.argv[0] = 'wopeval'; from wopeval.cli.main import main; main()",
]
EMBEDDED_READY = "embedded host ready at "
BARE_READY = "bare host ready"
SERVE_DEADLINE_SECONDS = 60.0


@dataclass
class Timing:
    command: str
    target_s: float | None
    median_s: float
    p90_s: float
    ratio_to_anchor: float
    """The median over the anchor's median: what carries across machines."""
    runs_s: list[float]
    cpu_median_s: float
    """The median of the process's own user + system seconds (its children's included)."""
    cpu_runs_s: list[float]


@dataclass
class Report:
    runs: int
    cpu_count: int | None
    python: str
    load_average: list[float] = field(default_factory=list)
    """1-minute load average at the start and at the end: a busy machine lowers every figure."""
    timings: list[Timing] = field(default_factory=list)


def _environment() -> dict[str, str]:
    """This environment without WOPEVAL_* settings, which would change the host each command
    starts, with a wide terminal (a table is printed once, not wrapped), and with bytecode
    written: an installed wopeval's modules are compiled once, as pip leaves them, while
    under `PYTHONDONTWRITEBYTECODE` every command would compile each module it imports."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("WOPEVAL_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["COLUMNS"] = "200"
    return env


def _once(argv: list[str], cwd: Path, ready: str | None = None) -> tuple[float, float]:
    """Wall seconds from spawn to exit, or to the first stderr line starting with `ready`
    when given; and the CPU seconds the finished process used in all."""
    before = _children_cpu()
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=_environment()
    )
    assert process.stderr is not None
    readied: float | None = None
    said: list[str] = []
    if ready is not None:
        for line in process.stderr:
            said.append(line)
            if line.startswith(ready):
                readied = time.perf_counter() - started
                break
    out, err = process.communicate()
    exited = time.perf_counter() - started
    if process.returncode != 0 or (ready is not None and readied is None):
        printed = out + "".join(said) + err
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}:\n{printed}")
    return (exited if readied is None else readied), _children_cpu() - before


def _children_cpu() -> float:
    """User + system seconds of this process's reaped children (the serve is reaped last)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _p90(values: list[float]) -> float:
    return (
        statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]
    )


def measure(
    label: str,
    argv: list[str],
    runs: int,
    cwd: Path,
    target: float | None,
    anchor: float | None,
    ready: str | None = None,
) -> Timing:
    measured = [_once(argv, cwd, ready) for _ in range(runs)]
    taken = [wall for wall, _ in measured]
    cpu = [used for _, used in measured]
    median = statistics.median(taken)
    timing = Timing(
        command=label,
        target_s=target,
        median_s=median,
        p90_s=_p90(taken),
        ratio_to_anchor=median / anchor if anchor else 1.0,
        runs_s=taken,
        cpu_median_s=statistics.median(cpu),
        cpu_runs_s=cpu,
    )
    verdict = (
        ""
        if target is None
        else f"  target ≤ {target:.1f} s: " + ("met" if median <= target else "not met")
    )
    print(
        f"{label:44} median {median:6.3f} s  p90 {timing.p90_s:6.3f} s"
        f"  {timing.ratio_to_anchor:5.1f}× the anchor  cpu {timing.cpu_median_s:5.3f} s{verdict}",
        flush=True,
    )
    return timing


class Serve:
    """`wopeval serve` on DATA_DIR and a free port, its dev key read once it is up."""

    def __init__(self, data_dir: Path, log: Path) -> None:
        self.data_dir = data_dir
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [WOPEVAL, "serve", "--port", "0", "--data-dir", str(data_dir)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=_environment(),
        )

    def wait_up(self) -> tuple[str, str]:
        """The URL it announced (serve.json) and its dev API key."""
        announcement = self.data_dir / "serve.json"
        deadline = time.monotonic() + SERVE_DEADLINE_SECONDS
        while not announcement.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"wopeval serve did not come up (exit {self.process.poll()})")
            time.sleep(0.05)
        url = str(json.loads(announcement.read_text())["url"])
        return url, (self.data_dir / "dev-api-key").read_text().strip()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self._log.close()


def run(runs: int) -> Report:
    report = Report(
        runs=runs,
        cpu_count=os.cpu_count(),
        python=sys.version.split()[0],
        load_average=[os.getloadavg()[0]],
    )
    with tempfile.TemporaryDirectory(prefix="wopeval-cli-bench-") as scratch:
        work = Path(scratch)
        embedded, served = work / "embedded", work / "served"
        # The first command on a new data directory builds its database: not what is timed.
        _once([WOPEVAL, "runs", "list", "--data-dir", str(embedded)], work)
        anchor = measure("python -c pass (anchor)", [PYTHON, "-c", "pass"], runs, work, None, None)
        report.timings.append(anchor)
        base = anchor.median_s
        listing = ["runs", "list", "--data-dir", str(embedded)]
        rows: tuple[tuple[str, list[str], float | None, str | None], ...] = (
            ("wopeval --version", [WOPEVAL, "--version"], 0.3, None),
            ("wopeval --help", [WOPEVAL, "--help"], 0.3, None),
            ("bare FastAPI + SQLAlchemy host ready (floor)", [PYTHON, BARE_HOST], None, BARE_READY),
            ("wopeval runs list: host ready", [*LOGGED_WOPEVAL, *listing], 0.8, EMBEDDED_READY),
            ("wopeval runs list (embedded host), to exit", [WOPEVAL, *listing], None, None),
        )
        for label, argv, target, ready in rows:
            report.timings.append(measure(label, argv, runs, work, target, base, ready))
        serve = Serve(served, work / "serve.log")
        try:
            url, key = serve.wait_up()
            for label, argv in (
                ("wopeval runs list --url (serve running)", ["--url", url, "--api-key", key]),
                ("wopeval runs list --data-dir (serve running)", ["--data-dir", str(served)]),
            ):
                command = [WOPEVAL, "runs", "list", *argv]
                report.timings.append(measure(label, command, runs, work, 0.5, base))
        finally:
            serve.stop()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20, help="runs of each command (default 20)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    report = run(args.runs)
    finish(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
