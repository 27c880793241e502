"""The recorded boundaries (tool calls, model calls, invocations, grants) and content rules; may touch `runlog`."""
