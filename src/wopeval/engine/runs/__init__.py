"""A run's lifecycle: create, execute, end, command, fork, erase. May import the rooms above."""
