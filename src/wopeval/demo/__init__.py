"""`wopeval demo`: the main job in one command — record, replay, compare."""

from wopeval.demo.crm import CrmService
from wopeval.demo.runner import DemoResult, run_demo

__all__ = ["CrmService", "DemoResult", "run_demo"]
