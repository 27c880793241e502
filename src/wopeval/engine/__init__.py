"""Executes runs: the workflow interpreter, the eval runner, the tool boundary, the log writer
and the shared tails that streams follow a log through.

Call sites import the module they mean (`from wopeval.engine.host import Engine`).
"""
