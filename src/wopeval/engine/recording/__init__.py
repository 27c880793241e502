"""Tool and model boundaries, invocations, grants, content rules. May import `runlog`."""
