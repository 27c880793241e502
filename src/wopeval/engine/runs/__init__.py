"""A run's lifecycle: create, execute, end, command, fork, erase, queue; may touch `catalog`, `recording`, `runlog`, `live`."""
