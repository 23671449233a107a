"""Import circles among impl's modules (run from the project root: python .ci/import_circles.py . --types): every `import impl...` / `from impl... import` (module level or inside
functions; with --types also under `if TYPE_CHECKING:`), file to file. Prints the circles (strongly connected parts of more than
one file) and a last line `import circles: N (largest M files)`.

With --packages, the layers of specs/architecture.md instead, package to package (impl/x/... and impl/x.py are the package
impl.x): every import counts, under TYPE_CHECKING and inside functions too, and so does a call importlib.import_module("impl..."),
__import__("impl...") or require("impl...") with a literal name, except a require() of a connector (a facade's lazy convenience
call, pypaimon's to_duckdb style). Fails on a circle among packages, a connector (impl.spark, impl.ray, impl.duckdb,
impl.polars) importing another connector, a core package importing a connector, and any package importing the application
impl.cli; prints each violation with one file:line."""
import ast
import os
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
root = args[0] if args else "."
PACKAGES = "--packages" in sys.argv
TYPES = "--types" in sys.argv or PACKAGES  # count imports under `if TYPE_CHECKING:` too
CONNECTORS = ("impl.spark", "impl.ray", "impl.duckdb", "impl.polars")
APPLICATIONS = ("impl.cli",)
DYNAMIC = {"import_module", "__import__", "require"}
sites = {}  # (module, imported module) -> line of the first import, for the package report
files = {}
for d, _, fs in os.walk(os.path.join(root, "impl")):
    for f in fs:
        if f.endswith(".py"):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)[:-3].replace(os.sep, ".")
            files[rel[:-9] if rel.endswith(".__init__") else rel] = p


def resolve(mod):
    return mod if mod in files else None


def package(mod):
    return ".".join(mod.split(".")[:2])


def dynamic_target(call):
    """The impl module a literal import_module / __import__ / require call imports, or None (a require of a connector: a
    facade's lazy call into an engine adapter, left out of the layers)."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
    if name not in DYNAMIC or not call.args or not isinstance(call.args[0], ast.Constant):
        return None
    target = call.args[0].value
    if not isinstance(target, str) or not target.startswith("impl"):
        return None
    if name == "require" and package(target) in CONNECTORS:
        return None
    while target and not resolve(target):
        target = target.rpartition(".")[0]
    return target or None


def imports(path, modname):
    tree = ast.parse(open(path).read())
    out = set()

    def add(target, node):
        out.add(target)
        sites.setdefault((modname, target), node.lineno)
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
                            add(m, ch)
            elif isinstance(ch, ast.Import):
                for a in ch.names:
                    if a.name.startswith("impl") and resolve(a.name):
                        add(a.name, ch)
            elif PACKAGES and isinstance(ch, ast.Call) and (m := dynamic_target(ch)):
                add(m, ch)
            visit(ch)

    visit(tree)
    out.discard(modname)
    return out


graph = {m: imports(p, m) for m, p in files.items()}
if PACKAGES:
    first_site = {}
    for m, targets in graph.items():
        for t in targets:
            if package(t) != package(m):
                first_site.setdefault((package(m), package(t)), f"{files[m]}:{sites[(m, t)]} ({t})")
    files = {package(m): "" for m in files}
    graph = {p: set() for p in files}
    for a, b in first_site:
        graph[a].add(b)
    bad = []
    for (a, b), where in sorted(first_site.items()):
        if b in APPLICATIONS:
            bad.append(f"{a} imports the application {b}: {where}")
        elif b in CONNECTORS and a in CONNECTORS:
            bad.append(f"connector {a} imports connector {b}: {where}")
        elif b in CONNECTORS and a not in CONNECTORS + APPLICATIONS:
            bad.append(f"core package {a} imports connector {b}: {where}")
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
    if PACKAGES:
        for a in c:
            for b in sorted(graph[a] & set(c)):
                print(f"  {a} -> {b}: {first_site[(a, b)]}")
if PACKAGES:
    for line in bad:
        print(line)
    print(f"package circles: {len(sccs)}, layer violations: {len(bad)}")
    sys.exit(1 if sccs or bad else 0)  # CI (.ci/lint) fails on any
print(f"import circles: {len(sccs)} (largest {max((len(c) for c in sccs), default=0)} files)")
sys.exit(1 if sccs else 0)  # CI (.ci/lint) fails on any circle
