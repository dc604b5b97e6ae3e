"""Reads a JUnit XML report with junitparser (as CI systems' plugins do)
and prints what it found as JSON: each suite's counts and each test case
with its outcome, message and text. Used by crates/cli/tests/check.rs."""
import json
import sys

from junitparser import Error, Failure, JUnitXml, Skipped

xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for suite in xml:
    cases = []
    for case in suite:
        outcome, message, text = "passed", None, None
        for r in case.result:
            if isinstance(r, Failure):
                outcome = "failure"
            elif isinstance(r, Error):
                outcome = "error"
            elif isinstance(r, Skipped):
                outcome = "skipped"
            message, text = r.message, r.text
        cases.append({
            "name": case.name,
            "classname": case.classname,
            "outcome": outcome,
            "is_passed": case.is_passed,
            "message": message,
            "text": text,
        })
    props = {p.name: p.value for p in suite.properties()}
    suites.append({
        "name": suite.name,
        "tests": suite.tests,
        "failures": suite.failures,
        "errors": suite.errors,
        "properties": props,
        "cases": cases,
    })
print(json.dumps({"suites": suites}))
