"""Reading a JUnit file the way a CI server would: schema-valid, then testcase outcomes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("junit.xsd"))


def outcomes(path: Path) -> dict[str, tuple[str, str]]:
    """Validate against the schema; task id → (`passed`|`failure`|`skipped`, message)."""
    SCHEMA.validate(str(path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    found: dict[str, tuple[str, str]] = {}
    for case in root.iter("testcase"):
        child = next((c for c in case if c.tag in ("failure", "skipped", "error")), None)
        kind = child.tag if child is not None else "passed"
        message = child.get("message", "") if child is not None else ""
        found[case.get("name", "")] = (kind, message)
    return found


def suite_counts(path: Path) -> dict[str, str]:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    return {k: suite.get(k, "") for k in ("tests", "failures", "errors", "skipped")}
