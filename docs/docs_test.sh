#!/usr/bin/env bash
# docs/ stands alone: no page cites the design notes outside the repository (DESIGN,
# STYLE, ../shared's reference pages), and every relative link between pages resolves to
# a page and, with a #fragment, to one of its headings (GitHub's slugs).
#   docs_test.sh PAGE...
set -u
python3 - "$@" <<'PY'
import os, re, sys

pages = {os.path.basename(p): p for p in sys.argv[1:]}
failed = []

def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")

anchors = {}
for name, path in pages.items():
    text = open(path, encoding="utf-8").read()
    anchors[name] = {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, re.M)}

for name, path in pages.items():
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if re.search(r"\bDESIGN(\.md)?\b|\bSTYLE\.md\b|shared/reference", line):
            failed.append(f"{name}:{n}: cites a document outside the repository: {line.strip()[:100]}")
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                continue
            page, _, fragment = target.partition("#")
            page = page or name
            if not page.endswith(".md"):
                continue  # source files and directories: not pages
            base = os.path.basename(page)
            if base not in pages:
                failed.append(f"{name}:{n}: link to '{target}': no such page in docs/")
            elif fragment and fragment not in anchors[base]:
                failed.append(f"{name}:{n}: link to '{target}': {base} has no heading '#{fragment}'")

for f in failed:
    print("FAIL " + f)
print(f"{len(pages)} pages checked, {len(failed)} problems")
sys.exit(1 if failed else 0)
PY
