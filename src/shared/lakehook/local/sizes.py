"""Print each built function's unzipped size (its code plus every layer it uses) against Lambda's limit.

Usage: ``python -m lakehook.local.sizes .aws-sam/build`` after ``sam build``. Exits 1 if any function
is over the 250 MB limit for unzipped code plus layers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from lakehook.local.template import _Loader

LIMIT_BYTES = 250 * 1024 * 1024


def tree_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _layer_ids(layers: list[Any]) -> list[str]:
    return [layer["Ref"] for layer in layers if isinstance(layer, dict) and "Ref" in layer]


def function_sizes(build_dir: Path) -> list[tuple[str, int, dict[str, int]]]:
    """(function, total bytes, {part: bytes}) for every function of the built template."""
    template = yaml.load((build_dir / "template.yaml").read_text(), Loader=_Loader)
    resources = template.get("Resources", {})
    global_layers = _layer_ids(template.get("Globals", {}).get("Function", {}).get("Layers", []))
    rows = []
    for name, resource in resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource.get("Properties", {})
        parts = {"code": tree_size(build_dir / props.get("CodeUri", name))}
        # SAM appends a function's own Layers to the Globals list.
        for layer in dict.fromkeys(global_layers + _layer_ids(props.get("Layers", []))):
            content = resources.get(layer, {}).get("Properties", {}).get("ContentUri", layer)
            parts[layer] = tree_size(build_dir / content)
        rows.append((name, sum(parts.values()), parts))
    return rows


def main(argv: list[str]) -> int:
    build_dir = Path(argv[1] if len(argv) > 1 else ".aws-sam/build")
    rows = function_sizes(build_dir)
    worst = 0
    print(f"{'function':<32} {'unzipped (code + layers)':>26}  parts")
    for name, total, parts in sorted(rows):
        detail = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in parts.items())
        flag = "  OVER THE LIMIT" if total > LIMIT_BYTES else ""
        print(f"{name:<32} {total / 1e6:>23.1f} MB  {detail}{flag}")
        worst = max(worst, total)
    print(f"limit: {LIMIT_BYTES / 1e6:.1f} MB (250 MiB) unzipped per function; largest: {worst / 1e6:.1f} MB")
    return 1 if worst > LIMIT_BYTES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
