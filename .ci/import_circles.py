"""Import circles among impl's modules (run from the project root: python .ci/import_circles.py . --types): every `import impl...` / `from impl... import` (module level or inside
functions; with --types also under `if TYPE_CHECKING:`), file to file. Prints the circles (strongly connected parts of more than
one file) and a last line `import circles: N (largest M files)`."""
import ast
import os
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
root = args[0] if args else "."
TYPES = "--types" in sys.argv  # count imports under `if TYPE_CHECKING:` too
files = {}
for d, _, fs in os.walk(os.path.join(root, "impl")):
    for f in fs:
        if f.endswith(".py"):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)[:-3].replace(os.sep, ".")
            files[rel[:-9] if rel.endswith(".__init__") else rel] = p


def resolve(mod):
    return mod if mod in files else None


def imports(path, modname):
    tree = ast.parse(open(path).read())
    out = set()
    pkg = modname if path.endswith("__init__.py") else modname.rsplit(".", 1)[0]

    def visit(node):
        for ch in ast.iter_child_nodes(node):
            if not TYPES and isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test):
                for e in ch.orelse:
                    visit(e)
                continue
            if isinstance(ch, ast.ImportFrom):
                base = ch.module or ""
                if ch.level:
                    parts = pkg.split(".")
                    parts = parts[: len(parts) - (ch.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                if base.startswith("impl"):
                    for a in ch.names:
                        m = resolve(f"{base}.{a.name}") or resolve(base)
                        if m:
                            out.add(m)
            elif isinstance(ch, ast.Import):
                for a in ch.names:
                    if a.name.startswith("impl") and resolve(a.name):
                        out.add(a.name)
            visit(ch)

    visit(tree)
    out.discard(modname)
    return out


graph = {m: imports(p, m) for m, p in files.items()}
# package __init__ re-exports are not circles of their own: drop edges into a package's own __init__ from inside it
for m in graph:
    graph[m] = {t for t in graph[m] if not (m.startswith(t + ".") and files[t].endswith("__init__.py"))}
index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)


def strong(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in graph[v]:
        if w not in index:
            strong(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))


for v in graph:
    if v not in index:
        strong(v)
for c in sccs:
    print(f"circle of {len(c)}: {', '.join(c)}")
print(f"import circles: {len(sccs)} (largest {max((len(c) for c in sccs), default=0)} files)")
sys.exit(1 if sccs else 0)  # CI (.ci/lint) fails on any circle
