"""Reports of an eval run: pure functions from a summary to a JUnit XML or HTML string."""

from wopeval.reports.html import RunFacts, html_report
from wopeval.reports.junit import junit_xml

__all__ = ["RunFacts", "html_report", "junit_xml"]
