"""The run log: steps, run-row transitions, fences, the one writer. May import `live`."""
