"""No function in ``src/stagewise`` is longer than 100 lines (issue 20): a long unit mixes responsibilities that
a reader, a reviewer and a test would rather meet one at a time. The lines counted are the function's whole
span, decorators and docstring included, as ``ast`` reports them."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "stagewise"
LIMIT = 100


def long_units(root: Path = SRC, limit: int = LIMIT) -> list[tuple[str, str, int]]:
    """``(file, qualified name, lines)`` of every function or method in ``root`` longer than ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found += _walk(tree, str(path.relative_to(root)), "", limit)
    return found


def _walk(node: ast.AST, where: str, prefix: str, limit: int) -> list[tuple[str, str, int]]:
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                lines = (child.end_lineno or child.lineno) - first + 1
                if lines > limit:
                    found.append((where, name, lines))
            found += _walk(child, where, name + ".", limit)
        else:
            found += _walk(child, where, prefix, limit)
    return found


def test_the_counter_sees_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    method = body.replace("    ", "        ")
    (tmp_path / "m.py").write_text(f"class A:\n    def short(self):\n        return 1\n\n    def long(self):\n{method}")
    (tmp_path / "n.py").write_text("def outer():\n    def inner():\n" + method + "    return 1\n")
    assert long_units(tmp_path) == [
        ("m.py", "A.long", LIMIT + 1),
        ("n.py", "outer", LIMIT + 3),
        ("n.py", "outer.inner", LIMIT + 1),
    ]


def test_no_function_is_longer_than_100_lines() -> None:
    found = long_units()
    print("\n".join(f"{where}: {name} ({lines} lines)" for where, name, lines in found))
    assert found == []
