"""Protocol shapes, no I/O: bodies, events, the error envelope, ids, limits, suites, summaries.

Call sites import the module they mean (`from wopeval.wire import errors, events`),
so a name always shows which part of the wire it comes from.
"""
