"""Readers that follow a run log as it grows (tails, wake-ups, read cache); touches no other engine room."""
