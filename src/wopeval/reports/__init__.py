"""Reports of an eval run: pure functions from a summary to a JUnit XML or HTML string."""

from wopeval.reports.html import RunFacts, html_report
from wopeval.reports.junit import cost_text, junit_xml

__all__ = ["RunFacts", "cost_text", "html_report", "junit_xml"]
