"""Executes runs: the workflow interpreter, the eval runner, the tool boundary, the log writer.

Call sites import the module they mean (`from wopeval.engine.host import Engine`).
"""
