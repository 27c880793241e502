"""What the host serves: project, agents, tools, graders, suites. May import recording, runlog."""
