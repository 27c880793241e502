"""The run log: its steps, row transitions, fences and the one writer; may touch `live`."""
