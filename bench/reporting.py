"""How every bench ends: the load average beside its figures, and the JSON report.

A figure means little without the load it was taken under on a shared machine, so each
report holds the 1-minute load average at its start and its end.
"""

from __future__ import annotations

import json
import os
from dataclasses import Field, asdict
from pathlib import Path
from typing import Any, ClassVar, Protocol


class Measured(Protocol):
    """A bench's report: a dataclass with the load average and the core count."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    load_average: list[float]
    cpu_count: int | None


def finish(report: Measured, json_path: Path | None) -> None:
    """Note the load average at the end, print both, and write the report if asked."""
    report.load_average.append(os.getloadavg()[0])
    print(
        f"load     1-minute load average {report.load_average[0]:.2f} at start,"
        f" {report.load_average[-1]:.2f} at end ({report.cpu_count} cores)",
        flush=True,
    )
    if json_path is not None:
        json_path.write_text(json.dumps(asdict(report), indent=2) + "\n")
