#!/usr/bin/env python3
"""Summarises a `bazel test` run from its build event file (--build_event_json_file).

Prints the failing targets, then one closing line `tests: N passed, M failed, K skipped`
(K may be 0), counting Catch2 test cases from each test target's test.log ("All tests
passed (.. in N test cases)" or "test cases: N | P passed | F failed"). A line starting
`SKIP ` in a Catch2 log is one skipped case (a test case whose data is missing,
lib/testing/testdata.h): it counts as skipped, not passed (taken off that log's passed
cases, never below 0). A test target whose log has no Catch2 summary (a script test)
counts as one test: skipped when it passed with a line starting `SKIP ` and none
starting `PASS ` (it could not run here, e.g. without network namespaces or without its
data), else passed, and then each of its `SKIP ` lines is one skipped item more. A test
that crashed, timed out or failed to build counts as one failure; so does any other
target that failed to build, and a Bazel exit code other than 0 (passed) or 3 (tests
failed) when nothing else explains it. Exits 1 if anything failed.

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
    """(passed, failed, skipped) Catch2 test cases from one log, or None without a
    summary; each SKIP line is a skipped case, not a passed one."""
    m = ALL_PASSED.search(log)
    if m:
        passed, failed = int(m.group(1)), 0
    else:
        m = CASES_LINE.search(log)
        if not m:
            return None

        def column(pattern):
            found = re.search(pattern, m.group(1))
            return int(found.group(1)) if found else 0
        # Columns: passed, failed, failed as expected ([!shouldfail] tests: a pass).
        passed = column(r"(\d+) passed") + column(r"(\d+) failed as expected")
        failed = column(r"(\d+) failed(?! as expected)")
    skipped = len(SKIP_LINE.findall(log))
    return max(passed - skipped, 0), failed, skipped


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
        print("tests: 0 passed, 1 failed, 0 skipped")
        return 1

    passed = failed = skipped = 0
    bad = []
    for label in sorted(test_targets | set(summaries)):
        status, logs = summaries.get(label, ("FAILED_TO_BUILD", []))
        counts = [c for c in (count_cases(read_log(u)) for u in logs) if c is not None]
        target_ok = status in ("PASSED", "FLAKY")
        if counts:
            passed += sum(p for p, _, _ in counts)
            failed += sum(f for _, f, _ in counts)
            skipped += sum(s for _, _, s in counts)
            if not target_ok and not any(f for _, f, _ in counts):
                failed += 1  # e.g. crashed or timed out after its last summary
        elif target_ok:
            texts = [read_log(u) for u in logs]
            skip_lines = sum(len(SKIP_LINE.findall(t)) for t in texts)
            if skip_lines and not any(PASS_LINE.search(t) for t in texts):
                skipped += 1
            else:
                passed += 1
                skipped += skip_lines
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
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
