"""Writes ``impl/options/paimon_1_4_2.py``: every table option Paimon Java 1.4.2 declares.

A dev tool (the product never runs Java): it asks the harness (op ``option_keys``, which
reflects over the public static ``ConfigOption`` fields of the classes below) for each key's
default, fallback keys and the first line of its description, and writes them as a Python
module, sorted by key, so a Paimon upgrade shows up as a reviewable diff. Then classify any new
key in ``impl/options/registry.py`` (``tests/paimon_java/test_option_registry.py`` fails until
every declared key is classified).

Run from the repository root: ``python tests/paimon_java/gen_option_registry.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "_support"))

from paimon_java import PAIMON_JAVA_VERSION, JavaServer  # noqa: E402 - after the path above

# The option classes whose keys live in table options and that the harness's class path
# (paimon-bundle) holds. FlinkConnectorOptions (paimon-flink) and the Spark connector's options
# are not on it; CatalogOptions / RESTCatalogOptions are catalog options, not table options.
OPTION_CLASSES = (
    "org.apache.paimon.CoreOptions",
    "org.apache.paimon.iceberg.IcebergOptions",
    "org.apache.paimon.format.OrcOptions",
)
OUT = ROOT / "impl" / "options" / f"paimon_{PAIMON_JAVA_VERSION.replace('.', '_')}.py"


def java_options(server: JavaServer) -> list[dict]:
    """The harness's ``option_keys`` answer for :data:`OPTION_CLASSES`."""
    return server.call("option_keys", classes=list(OPTION_CLASSES))


def render(options: list[dict]) -> str:
    lines = [
        f'"""Every table option Apache Paimon {PAIMON_JAVA_VERSION} declares (generated: do not edit).',
        "",
        "Written by ``tests/paimon_java/gen_option_registry.py`` from the harness's reflection over",
        f"{', '.join(c.rsplit('.', 1)[1] for c in OPTION_CLASSES)}. One entry per key:",
        "(key, default as Paimon's Options stores it or None, fallback keys, declaring class, the",
        "description's first line). :mod:`impl.options.registry` classifies each key.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f'PAIMON_VERSION = "{PAIMON_JAVA_VERSION}"',
        "",
        "DECLARED: tuple[tuple[str, str | None, tuple[str, ...], str, str], ...] = (",
    ]
    for o in sorted(options, key=lambda o: o["key"]):
        fallbacks = "".join(f"{k!r}, " for k in o["fallback_keys"]).rstrip(" ")
        description = o["description"][:160]
        lines.append(f"    ({o['key']!r}, {o['default']!r}, ({fallbacks}), {o['class']!r},")
        lines.append(f"     {description!r}),")
    lines.append(")")
    return "\n".join(lines) + "\n"


def main() -> None:
    with JavaServer() as server:
        OUT.write_text(render(java_options(server)))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
