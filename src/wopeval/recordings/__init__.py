"""Recording bundles: recorded runs carried from one store to another (operator tooling, never a
wire route; `wopeval recordings export|import`, docs/recordings.md).

The store reads and writes a bundle's rows (store/bundle.py); this room decides
which runs may travel and reads what their rows say: a run's status and event log,
and the run ids inside its documents (create requests, plans, event payloads,
summaries), which import moves to the importing tenant. That is wire knowledge,
which the store does not interpret, so it lives above the store.

It is a room of its own rather than part of the engine: it runs nothing, needs only
the wire and the store (tests/unit/test_layers.py), and only the CLI uses it, so
it sees no more of the host than carrying rows between stores asks.
"""

from wopeval.recordings._bundles import (
    Exported,
    Imported,
    export_runs,
    import_bundle,
    read_bundle,
    tagged_run_ids,
)
from wopeval.store.bundle import Bundle, BundleError, Origin

__all__ = [
    "Bundle",
    "BundleError",
    "Exported",
    "Imported",
    "Origin",
    "export_runs",
    "import_bundle",
    "read_bundle",
    "tagged_run_ids",
]
