"""How each role's process is assembled: `wopeval serve`, the CLI's embedded host, a queue worker.

This room builds what a process runs on (docs/design.md §1): its database lease
and owner (`ownership`, which also watches the lease), its API keys
(`credentials`), its catalog (`catalog`), its store and engine (`host` for a
process that serves the API, `app` for that process's app; `worker_host` for a
queue worker), its background work (`housekeeping`, `collector`) and its
sockets (`loopback`); and how a CLI command finds the serve that owns a data
directory without loading any of it (`discovery`). `api` only serves HTTP from
what is built here and never imports this room; `client`, `worker` and `cli`
import it, never `api`.

The modules are imported one by one, never through this package: a CLI command
loads the server stack only when it starts a host, so `wopeval --version` stays
fast.
"""
