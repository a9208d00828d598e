"""The in-memory fakes are for tests only: no Lambda layer ships them and no deployed module imports them."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKES = ("lakehook.adapters.memory", "lakehook.adapters.memory_coverage", "lakehook.adapters.memory_dispatch")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_no_deployed_module_imports_a_fake() -> None:
    package = ROOT / "src" / "shared" / "lakehook"
    deployed = [p for p in [*package.rglob("*.py"), *(ROOT / "functions").rglob("*.py")] if "memory" not in p.name]
    offenders = {str(p.relative_to(ROOT)) for p in deployed if any(m.startswith(FAKES) for m in _imports(p))}
    assert offenders == set()


def test_the_layer_build_leaves_the_fakes_out(tmp_path: Path) -> None:
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "src" / "shared"), "build-SharedLayer", f"ARTIFACTS_DIR={tmp_path}"],
        check=True,
    )
    built = tmp_path / "python" / "lakehook"
    assert (built / "adapters" / "dynamodb").is_dir()
    assert sorted(p.name for p in (built / "adapters").glob("memory*")) == []
