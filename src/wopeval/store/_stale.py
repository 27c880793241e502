"""A checked statement that changed fewer rows than it had to (store/_driver.py
`hold_checked`, `run_checked`; store/_pg_batch.py), apart so both may import it."""

from __future__ import annotations


class StaleRun(Exception):
    """A checked statement of a pipelined transaction (`hold_checked`), or of SQLite's
    (`run_checked`), changed fewer rows than it had to: nothing of the transaction is
    written (the server stopped at it and its COMMIT never ran; SQLite's is rolled back),
    and the caller goes the way that reads what it had assumed."""


CHECK_FAILED = "wopeval: checked statement changed rows: "
"""What the failing cast of a checked statement reads, so that its error is told apart."""
