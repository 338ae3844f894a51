"""The duetflow modules a source file imports, read from its import statements (not from what
happens to be imported at run time): also those inside functions and under
``if TYPE_CHECKING:``, relative imports resolved to their package."""

from __future__ import annotations

import ast
from pathlib import Path

import duetflow

SRC = Path(duetflow.__file__).parent


def module_name(path: Path) -> str:
    """``src/duetflow/a/b.py`` → ``duetflow.a.b`` (a package's ``__init__`` → the package)."""
    parts = ("duetflow", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts).removesuffix(".__init__")


def duetflow_imports(path: Path, package: str | None = None) -> set[str]:
    """Every ``duetflow`` module ``path`` names in an import statement; ``package``: the one
    relative imports resolve against (default: the file's own, under ``src/duetflow``)."""
    if package is None:
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the file's package
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names if mod == "duetflow")
    return {m for m in found if m == "duetflow" or m.startswith("duetflow.")}
