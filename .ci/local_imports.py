"""Function-local imports of impl's own modules need a comment saying why (run from the project
root: python .ci/local_imports.py). A group of indented ``from impl...`` / ``import impl...``
lines passes when a comment line sits right above it or one of its lines ends with a comment;
prints the others and exits 1 if there are any. Lazy imports of optional third-party
libraries are not impl imports and are not checked."""
import os
import re
import sys

LOCAL = re.compile(r"^\s+(from impl[\w.]* import|import impl\b)")
bad = []
for d, _, names in os.walk("impl"):
    for n in sorted(names):
        if not n.endswith(".py"):
            continue
        path = os.path.join(d, n)
        lines = open(path).read().split("\n")
        i = 0
        while i < len(lines):
            if not LOCAL.match(lines[i]):
                i += 1
                continue
            start = i
            while i < len(lines) and LOCAL.match(lines[i]):
                i += 1
            group = lines[start:i]
            above = lines[start - 1].strip() if start else ""
            if not above.startswith("#") and not any("#" in line for line in group):
                bad.append(f"{path}:{start + 1}: {group[0].strip()}")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
