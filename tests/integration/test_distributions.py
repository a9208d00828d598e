"""lakehook's three distributions, built as `make dists` builds them and installed into fresh virtualenvs.

``lakehook`` (the deployable: what the Lambda functions run), ``lakehook-tools`` (CLI, local runtime, demo, console)
and ``lakehook-client`` (push client, receiver, the wire formats they share with the server) are built from the one
source tree (``distributions/*/pyproject.toml``, ``scripts/build-dists.sh``). ``lakehook`` is a namespace package,
so the three install side by side without sharing a file: uninstalling one leaves the others whole. The client
needs nothing but the standard library; the deployable is the SharedLayer's modules (tests/unit/test_deployable.py)
less the wire formats, which it takes from the client distribution.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lakehook.version import __version__
from tests.unit.test_deployable import ROOT, SHARED, lambda_modules, package_modules, tool_only

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NAMES = {"lakehook": "lakehook", "tools": "lakehook_tools", "client": "lakehook_client"}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dists")
    done = subprocess.run(
        [str(ROOT / "scripts" / "build-dists.sh"), str(out), str(Path(sys.executable).with_name("pip"))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = {name: sorted(out.glob(f"{prefix}-{__version__}-py3-none-any.whl")) for name, prefix in NAMES.items()}
    assert all(len(paths) == 1 for paths in found.values()), sorted(p.name for p in out.iterdir())
    return {name: paths[0] for name, paths in found.items()}


def files_of(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {n for n in archive.namelist() if not n.split("/")[0].endswith(".dist-info")}


def modules_of(wheel: Path) -> set[str]:
    names = (f.removesuffix(".py").replace("/", ".") for f in files_of(wheel) if f.endswith(".py"))
    return {name.removesuffix(".__init__") for name in names}


def requirements_of(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(meta).decode().splitlines()
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]


def test_the_three_share_no_file_and_together_hold_the_whole_package(wheels: dict[str, Path]) -> None:
    files = {name: files_of(wheel) for name, wheel in wheels.items()}
    for a in files:
        for b in files:
            if a < b:
                assert not files[a] & files[b], (a, b, sorted(files[a] & files[b])[:5])
    assert not any(f == "lakehook/__init__.py" for f in set().union(*files.values()))  # a namespace package
    together = set().union(*(modules_of(wheel) for wheel in wheels.values()))
    assert together == package_modules()
    assert "lakehook/console/static/index.html" in files["tools"]  # the console's page ships with the CLI


def test_the_deployable_is_what_the_lambda_layer_ships_less_the_wire_formats(wheels: dict[str, Path]) -> None:
    """The lakehook wheel is the layer's modules less the wire formats (the client's), plus the modules of its own
    packages that only the CLI runs (tool-only.txt's entries under domain, ports, usecases, adapters and answers, such
    as the restore reconcile): the layer leaves those out, the wheel carries its packages whole."""
    deployable, client = modules_of(wheels["lakehook"]), modules_of(wheels["client"])
    wire = {m for m in client if m == "lakehook.wire" or m.startswith("lakehook.wire.")}
    core = ("domain", "ports", "usecases", "adapters", "api", "answers")
    cli_only = {m for m in tool_only() if m.split(".")[1] in core}
    assert wire and deployable | wire == lambda_modules() | cli_only
    assert not deployable & client
    assert client - wire == {m for m in package_modules() if m.split(".")[1] in ("client", "receiver")}


def _third_party_imports(modules: set[str]) -> set[str]:
    found: set[str] = set()
    for name in modules:
        path = SHARED.joinpath(*name.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"lakehook", "__future__"}


# Import name -> the distribution that provides it (or the one whose requirement brings it).
PROVIDED_BY = {
    "aws_lambda_powertools": "aws-lambda-powertools",
    "pydantic": "pydantic",
    "boto3": "boto3",
    "botocore": "boto3",
    "mypy_boto3_dynamodb": "",  # TYPE_CHECKING only
    "requests": "requests",
    "urllib3": "requests",
    "croniter": "croniter",
    "dateutil": "croniter",
    "pyiceberg": "pyiceberg",
    "pypaimon": "pypaimon",
    "pyarrow": "pyarrow",
    "fastavro": "pyiceberg",
    "sqlalchemy": "pyiceberg",  # pyiceberg's SQL catalog (its sql-sqlite extra): a local catalog, not in Lambda
    "yaml": "pyyaml",
    "moto": "moto",
    "werkzeug": "moto",
    "deltalake": "deltalake",
    "rich": "rich",
}


@pytest.mark.parametrize("name", ["lakehook", "tools", "client"])
def test_each_declares_what_its_modules_import(wheels: dict[str, Path], name: str) -> None:
    imports = _third_party_imports(modules_of(wheels[name]))
    unknown = sorted(i for i in imports if i not in PROVIDED_BY)
    assert unknown == [], f"{name} imports {unknown}: add them to PROVIDED_BY and to its pyproject"
    declared = {re.split(r"[\[;=<>~! ]", r, maxsplit=1)[0].lower() for r in requirements_of(wheels[name])}
    needed = {PROVIDED_BY[i] for i in imports} - {""}
    if name == "tools":
        declared |= {"aws-lambda-powertools", "pydantic", "boto3", "croniter", "pyiceberg", "pypaimon", "pyarrow"}
    assert needed <= declared, sorted(needed - declared)


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def _run(python: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, timeout=120, cwd="/")


def _install(python: Path, *wheels: Path) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", *map(str, wheels)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]


CLIENT_ONLY = """
import importlib.util, json
from lakehook.client import PushClient, sign
from lakehook.client.spool import SpoolWriter
from lakehook.receiver import WebhookReceiver, parse_invocation, verify_signature
from lakehook.wire.spool_format import manifest_checksum
header = sign("s3cret", b"{}", 1_700_000_000)
assert verify_signature("s3cret", b"{}", header, now=1_700_000_000) == 1_700_000_000
run = {"triggerKey": "r.g.1", "ruleId": "r", "groupId": "g", "inputs": [], "manifestUri": "s3://m/r.g.1.json",
       "attempt": 1, "partition": "dt=2026-12-01/region=us%2Fwest"}
assert parse_invocation(run).partition_values == {"dt": "2026-12-01", "region": "us/west"}
print(json.dumps([importlib.util.find_spec(m) is None for m in ("lakehook.domain", "lakehook.cli", "pydantic")]))
"""


def test_the_client_installs_alone_and_needs_nothing_but_the_standard_library(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    assert requirements_of(wheels["client"]) == []
    python = _venv(tmp_path / "client")
    _install(python, wheels["client"])
    done = _run(python, CLIENT_ONLY)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[true,", "true,", "true]"]  # no server, no tools, no pydantic


LIST_FILES = """
import lakehook, pathlib
for d in map(pathlib.Path, lakehook.__path__):
    for p in d.rglob("*.py"):
        print(p.relative_to(d.parent).as_posix())
"""


def _lakehook_files(python: Path) -> set[str]:
    done = _run(python, LIST_FILES)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_installed_side_by_side_uninstalling_one_leaves_the_others_whole(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    python = _venv(tmp_path / "all")
    _install(python, *wheels.values())
    before = _lakehook_files(python)
    assert len(before) == len(package_modules())
    done = subprocess.run(
        [str(python), "-m", "pip", "uninstall", "--quiet", "--yes", "lakehook-client"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    after = _lakehook_files(python)
    assert before - after == {f for f in files_of(wheels["client"]) if f.endswith(".py")}
    assert after == {f for w in ("lakehook", "tools") for f in files_of(wheels[w]) if f.endswith(".py")}
    probe = "import importlib.util as u; print(*(u.find_spec(m) is not None for m in ('{}', '{}')))"
    found = _run(python, probe.format("lakehook.cli", "lakehook.settings"))
    assert found.stdout.split() == ["True", "True"], found.stderr
