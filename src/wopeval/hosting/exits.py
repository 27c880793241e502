"""The exit code of a process another one owns the database of.

Refused at start (`ownership.claim`), or stopped when it finds its lease taken
(`ownership.watch_lease`). It lives apart from `ownership` so that the CLI's start-up
(`cli/_exit.py`) reads it without loading the store.
"""

DATABASE_OWNED_EXIT = 5
