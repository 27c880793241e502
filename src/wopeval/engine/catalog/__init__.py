"""What the host serves (project, agents, tools, graders, suites, secrets); may touch `recording`."""
