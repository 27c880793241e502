"""Executes runs, in rooms (docs/design.md §1): live ← runlog ← recording ← catalog ← runs ←
eval_runs, under the `Engine` facade (host.py), the one module that sees every room.

Call sites import the module they mean (`from wopeval.engine.host import Engine`).
"""
