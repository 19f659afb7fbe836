"""The entry layers (cli/, app/) use the packages below them through their public names only (issue 20): a
name starting with ``_`` imported from another package is a reach into its insides, which breaks when that
package is reorganised. Names from the entry layer's own package, and the base modules' public names
(``stagewise._io.check_output``), are fine."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import stagewise

PACKAGE = Path(stagewise.__file__).parent
ENTRY_LAYERS = ("cli", "app")


def _imports(path: Path, package: str) -> list[tuple[int, str, str]]:
    """(line, module, name) for each ``from MODULE import NAME`` in ``path``, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            if node.level:  # relative: from the module's own package upward
                base = f"stagewise.{package}".split(".")[: max(2 - node.level + 1, 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            out += [(node.lineno, module, alias.name) for alias in node.names]
    return out


@pytest.mark.parametrize("layer", ENTRY_LAYERS)
def test_entry_layers_import_no_private_name_from_another_package(layer: str) -> None:
    reaches = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, module, name in _imports(path, layer):
            own = module == f"stagewise.{layer}" or module.startswith(f"stagewise.{layer}.")
            dunder = name.startswith("__") and name.endswith("__")  # __version__ is public
            if module.startswith("stagewise") and not own and name.startswith("_") and not dunder:
                reaches.append(f"{path.relative_to(PACKAGE)}:{line}: from {module} import {name}")
    assert not reaches, "\n".join(reaches)


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    # the walk itself must find what it looks for, or the test above passes on anything
    sample = tmp_path / "x.py"
    sample.write_text("from stagewise.data.writers import _secret\nfrom stagewise import folders\n")
    assert [name for _, _, name in _imports(sample, "cli")] == ["_secret", "folders"]
