"""Eval runs: plan, trials, grading, landing, reads. May import every room but the facade."""
