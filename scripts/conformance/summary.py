#!/usr/bin/env python3
"""scripts/conformance/summary.py RESULTS_DIR — the pass/fail summary of one conformance run, from the junit
report e2e.test wrote there (junit_01.xml): counts, then each test that ran with its outcome and time, then the
first line of each failure. Also greps the proxies' logs for the source's watch errors (issue 24's symptom)."""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def main():
    out = sys.argv[1]
    reports = sorted(glob.glob(os.path.join(out, "junit*.xml")))
    if not reports:
        print(f"no junit report in {out}: see {out}/e2e.log")
        return 1
    ran = []
    for r in reports:
        for tc in ET.parse(r).getroot().iter("testcase"):
            if tc.find("skipped") is not None:
                continue
            fail = tc.find("failure")
            if fail is None:
                fail = tc.find("error")
            ran.append((tc.get("name", "?"), float(tc.get("time") or 0), fail))
    ran = [t for t in ran if t[0].startswith("[It]") or t[2] is not None]  # suite nodes count only when they fail
    failed = [t for t in ran if t[2] is not None]
    print(f"{len(ran) - len(failed)} passed, {len(failed)} failed")
    for name, secs, fail in ran:
        print(f"  {'FAIL' if fail is not None else 'pass'}  {secs:7.1f}s  {name}")
    for name, _, fail in failed:
        msg = (fail.get("message") or fail.text or "").strip().splitlines()
        print(f"\nFAIL {name}\n    {msg[0][:400] if msg else ''}")
    for log in sorted(glob.glob(os.path.join(out, "proxy-n*.log"))):
        with open(log, errors="replace") as f:
            lines = [ln for ln in f if "watch stream broke" in ln or "list/watch failed" in ln]
        if lines:
            print(f"\n{os.path.basename(log)}: {len(lines)} watch errors, first: {lines[0].strip()[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
