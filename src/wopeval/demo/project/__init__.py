"""The demo project: a support agent (v1 and v2), its tools, a workflow and a suite.

`wopeval.toml` here is the project file as a user would write it; `wopeval demo`
copies it into its data directory with the CRM's live loopback URL, and later
points `support-agent` at `agent_v2` to "change the agent".
"""
