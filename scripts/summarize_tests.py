#!/usr/bin/env python3
"""Summarises a `bazel test` run from its build event file (--build_event_json_file).

Prints the failing targets, then one closing line `tests: N passed, M failed`, counting
Catch2 test cases from each test target's test.log ("All tests passed (.. in N test
cases)" or "test cases: N | P passed | F failed"). A test target whose log has no Catch2
summary counts as one test: skipped when it passed with a line starting `SKIP ` and none
starting `PASS ` (a script test that could not run here, e.g. without network
namespaces), else passed; a test that crashed, timed out or failed to build counts as
one failure; so does any other target that failed to build, and a Bazel exit code
other than 0 (passed) or 3 (tests failed) when nothing else explains it. The closing
line adds `, K skipped` when K > 0. Exits 1 if anything failed.

Usage: summarize_tests.py BEP_JSON [BAZEL_EXIT_CODE]
"""

import json
import re
import sys
import urllib.parse
import urllib.request

ALL_PASSED = re.compile(r"^All tests passed \(\d+ assertions? in (\d+) test cases?\)", re.M)
CASES_LINE = re.compile(r"^test cases:(.*)$", re.M)
SKIP_LINE = re.compile(r"^SKIP ", re.M)
PASS_LINE = re.compile(r"^PASS ", re.M)


def read_log(uri):
    """The text of a test.log named by a file:// URI; '' when it cannot be read."""
    try:
        path = urllib.request.url2pathname(urllib.parse.urlparse(uri).path)
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def count_cases(log):
    """(passed, failed) Catch2 test cases from one log, or None without a summary."""
    m = ALL_PASSED.search(log)
    if m:
        return int(m.group(1)), 0
    m = CASES_LINE.search(log)
    if m:
        def column(pattern):
            found = re.search(pattern, m.group(1))
            return int(found.group(1)) if found else 0
        # Columns: passed, failed, failed as expected ([!shouldfail] tests: a pass).
        return (column(r"(\d+) passed") + column(r"(\d+) failed as expected"),
                column(r"(\d+) failed(?! as expected)"))
    return None


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    test_targets = set()  # labels of test rules that were configured
    completed = {}        # label -> built successfully
    summaries = {}        # label -> (overall status, [log URIs])
    try:
        with open(argv[1], encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                event = json.loads(line)
                ident = event.get("id", {})
                if "targetConfigured" in ident:
                    kind = event.get("configured", {}).get("targetKind", "")
                    if kind.endswith("_test rule"):
                        test_targets.add(ident["targetConfigured"]["label"])
                elif "targetCompleted" in ident:
                    label = ident["targetCompleted"]["label"]
                    ok = event.get("completed", {}).get("success", False)
                    completed[label] = completed.get(label, True) and ok
                elif "testSummary" in ident:
                    summary = event.get("testSummary", {})
                    logs = [x["uri"] for x in summary.get("passed", []) + summary.get("failed", [])
                            if "uri" in x]
                    summaries[ident["testSummary"]["label"]] = (
                        summary.get("overallStatus", "NO_STATUS"), logs)
    except (OSError, ValueError) as e:
        print(f"summarize_tests: cannot read build events: {e}", file=sys.stderr)
        print("tests: 0 passed, 1 failed")
        return 1

    passed = failed = skipped = 0
    bad = []
    for label in sorted(test_targets | set(summaries)):
        status, logs = summaries.get(label, ("FAILED_TO_BUILD", []))
        counts = [c for c in (count_cases(read_log(u)) for u in logs) if c is not None]
        target_ok = status in ("PASSED", "FLAKY")
        if counts:
            passed += sum(p for p, _ in counts)
            failed += sum(f for _, f in counts)
            if not target_ok and not any(f for _, f in counts):
                failed += 1  # e.g. crashed or timed out after its last summary
        elif target_ok:
            texts = [read_log(u) for u in logs]
            if any(SKIP_LINE.search(t) for t in texts) and not any(PASS_LINE.search(t)
                                                                  for t in texts):
                skipped += 1
            else:
                passed += 1
        else:
            failed += 1
        if not target_ok:
            bad.append(f"{label}: {status}")
    for label, ok in sorted(completed.items()):
        if not ok and label not in test_targets and label not in summaries:
            bad.append(f"{label}: FAILED_TO_BUILD")
            failed += 1

    bazel_rc = int(argv[2]) if len(argv) == 3 else 0
    if bazel_rc not in (0, 3) and not failed:
        bad.append(f"bazel exited with {bazel_rc}: the build did not complete")
        failed += 1

    if bad:
        print("failing targets:")
        for line in bad:
            print(f"  {line}")
    print(f"tests: {passed} passed, {failed} failed" +
          (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
