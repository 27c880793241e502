"""The `wopeval worker` role (queue mode, PostgreSQL): runs executed off a Procrastinate queue.

API processes (`wopeval serve --executor queue`) create runs and enqueue their
work in the same transaction (`queue.py`); workers fetch it (`app.py`),
execute eval chunks and workflow runs (`jobs.py`) through the engine's one log
writer behind a fence that checks job ownership (`fence.py`), follow the runs'
state (`watch.py`), and put stalled or orphaned work back (`maintenance.py`).
Only the CLI imports this package: nothing on the embedded default's path
loads Procrastinate.
"""
