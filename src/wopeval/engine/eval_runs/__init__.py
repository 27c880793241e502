"""Eval runs: plan, trials, grading, landing and reads of their results; may touch `runs`, `catalog`, `recording`, `runlog`, `live`."""
