"""Following logs as they grow: tails, wake-ups, read cache, notifier. Imports no engine room."""
