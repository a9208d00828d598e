"""Cold start: each function's import from the built artefacts (.aws-sam/build, `make build`) on Python 3.12.

Each run is a fresh `python3.12 -S` (pyenv's 3.12, the Lambda runtime's version) laid out as Lambda lays
out a function: its code directory first, then its layers' `python/` directories in the template's order,
then the runtime's own boto3 (not in any layer: the Lambda runtime brings it); bytecode is never written
(PYTHONDONTWRITEBYTECODE, as Lambda's code directory is read-only), and the environment is the one Lambda's
runtime sets (AWS_LAMBDA_FUNCTION_NAME, LAMBDA_TASK_ROOT, TZ, the X-Ray daemon's address; tracing not
disabled), so Powertools and the X-Ray SDK take their Lambda paths. The time is the import alone,
interpreter start excluded; runs are interleaved (every function once per round); figures are medians, with
the wall clock's min-max. Wall clock on a shared machine follows its load; the CPU time of the process
(`time.process_time`) much less, so both are given. The CPU time is split in import order: the runtime's boto3
(with botocore, urllib3, http.client), pydantic, Powertools' logger and metrics, then `import app` (lakehook,
what the handler imports from Powertools, the X-Ray SDK where it traces); a part is imported first only if the
function's plain import imports it too and importing it first leaves the modules imported unchanged (both
checked on first, uncounted runs: Powertools' batch utility imports more once pydantic is loaded).
The artefacts are built for arm64 and this machine may be x86_64: then each compiled extension (.so) of the
layers is replaced, in a copy under .aws-sam/bench/, by the same distribution's and version's x86_64 wheel;
every other file, the .pyc included, is the built one. With LAKEHOOK_BENCH_COLDSTART_BASE set to another build
(a copy of .aws-sam/build made on the base branch), each round imports each function from that build too, just
after this one's, and the table gains the base's medians (before/after under the same load).
Where lakehook imports on a function's first request what a build once imported at init (the ingest API's
route modules), "first request adds" is the CPU time of that import for a push, in the same process after
the init: a cold push costs the import plus it.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".aws-sam" / "build"
WORK = ROOT / ".aws-sam" / "bench"
ROUNDS = int(os.environ.get("LAKEHOOK_BENCH_COLDSTART_ROUNDS", "7"))
# Another build to compare with (e.g. a copy of .aws-sam/build made from the base branch): its functions are
# imported in the same rounds, each just after this build's, and the table gains its medians.
BASE = os.environ.get("LAKEHOOK_BENCH_COLDSTART_BASE")
GOAL_MS = 300.0

# What every function's import pulls in before any of lakehook's own code, imported first in this order to tell
# the parts apart; a part is imported first only if the function's plain `import app` imports it too, so the
# parts add up to that import.
PARTS = {
    "boto3": "import boto3",
    "pydantic": "import pydantic, pydantic.main",
    "powertools": "from aws_lambda_powertools import Logger, Metrics",
}

# What a function's first request imports on top of its init, where lakehook imports it on use: the ingest
# API includes a route's module on the first request to it (``lakehook.api.app.ROUTE_MODULES``); a push
# imports the events route's. Timed after the import, in the same process (CPU ms), on builds that do it.
FIRST_REQUEST = {"IngestApiFunction": "app.app.include_routes(['events'])"}

PROBE = """
import sys, time, json, hashlib
parts = json.loads(sys.argv[1])
first_request = sys.argv[2] if len(sys.argv) > 2 else ""
steps = {}
wall, cpu = time.perf_counter(), time.process_time()
for name, statement in parts.items():
    began = time.process_time()
    exec(statement)
    steps[name] = (time.process_time() - began) * 1000
began = time.process_time()
import app
steps["lakehook"] = (time.process_time() - began) * 1000
took, took_cpu = time.perf_counter() - wall, time.process_time() - cpu
mods = dict(sys.modules)
first_ms = None
if first_request and hasattr(app.app, "include_routes"):
    began = time.process_time()
    exec(first_request)
    first_ms = (time.process_time() - began) * 1000
print(json.dumps({"ms": took * 1000, "cpu_ms": took_cpu * 1000, "steps": steps, "modules": len(mods),
                  "first_request_cpu_ms": first_ms,
                  "xray": "aws_xray_sdk" in mods, "botocore": "botocore" in mods,
                  "parts": [n for n, m in (("boto3", "boto3"), ("pydantic", "pydantic"),
                                           ("powertools", "aws_lambda_powertools")) if m in mods],
                  "heavy": sorted(m for m in ("pyarrow", "pyiceberg", "pypaimon", "fastavro", "requests")
                                  if m in mods),
                  "botocore_from": getattr(mods.get("botocore"), "__file__", None),
                  "imported": hashlib.sha256(" ".join(sorted(mods)).encode()).hexdigest()}))
"""


def python312() -> str:
    found = sorted(
        (Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions").glob("3.12*/bin/python3.12")
    )
    if found:
        return str(found[-1])
    which = shutil.which("python3.12")
    if not which:
        raise SystemExit("no Python 3.12 (pyenv install 3.12)")
    return which


def _template_functions(build: Path = BUILD) -> dict[str, list[str]]:
    """Function logical id -> its layers' logical ids, from the built template."""
    from lakehook.local.template import Template

    template = Template.load(build / "template.yaml")
    globals_layers = [
        layer["Ref"] for layer in template.document.get("Globals", {}).get("Function", {}).get("Layers", [])
    ]
    functions: dict[str, list[str]] = {}
    for logical_id, resource in template.resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        own = [layer["Ref"] for layer in resource.get("Properties", {}).get("Layers", [])]
        functions[logical_id] = globals_layers + own
    return functions


def _arch_tag() -> str:
    return {"x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[platform.machine()]


def _host_layer(py: str, layer: str, build: Path = BUILD, work: Path = WORK) -> Path:
    """The layer's python/ dir; on another architecture, a copy whose extensions are this machine's."""
    built = build / layer / "python"
    host = _arch_tag()
    if host == "aarch64":
        return built
    copy = work / layer / "python"
    stamp = work / layer / ".built-from"
    source_stamp = str((build / layer).stat().st_mtime)
    if copy.exists() and stamp.exists() and stamp.read_text() == source_stamp:
        return copy
    shutil.rmtree(work / layer, ignore_errors=True)
    shutil.copytree(built, copy, symlinks=True)
    wheels = WORK / "wheels"
    for info in sorted(copy.glob("*.dist-info")):
        wheel_meta = info / "WHEEL"
        if not wheel_meta.exists() or "aarch64" not in wheel_meta.read_text():
            continue
        name, version = info.name[: -len(".dist-info")].rsplit("-", 1)
        for record_line in (info / "RECORD").read_text().splitlines():
            path = record_line.split(",", 1)[0]
            if "aarch64" in path or path.endswith(".so"):
                (copy / path).unlink(missing_ok=True)
        subprocess.run(
            [py, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
             "--implementation", "cp", "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64",
             "--platform", "manylinux_2_17_x86_64", "-d", str(wheels), f"{name}=={version}"],
            check=True,
        )  # fmt: skip
        wheel = next(w for w in wheels.glob("*.whl") if w.name.lower().startswith(name.lower().replace("-", "_") + "-"))
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.endswith(".so") or ".so." in member or ".libs/" in member:
                    archive.extract(member, copy)
    stamp.write_text(source_stamp)
    return copy


def _runtime_boto3(py: str) -> Path:
    """boto3 as the Lambda runtime has it (pinned by constraints.txt), outside every layer."""
    target = WORK / "runtime"
    if not (target / "boto3").exists():
        subprocess.run(
            [py, "-m", "pip", "install", "--quiet", "--target", str(target), "-c", str(ROOT / "constraints.txt"),
             "boto3"],
            check=True,
        )  # fmt: skip
    return target


def _environment(paths: list[Path]) -> dict[str, str]:
    """What Lambda's runtime sets that an import reacts to: LAMBDA_TASK_ROOT makes the X-Ray SDK take its
    Lambda path (a local sampler, no botocore client for the sampling API), TZ and the X-Ray daemon's address
    are the runtime's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "POWERTOOLS", "LAKEHOOK", "AWS_", "LAMBDA_", "_X_AMZN")) and k != "TZ"
    }
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(str(p) for p in paths),
            "PYTHONDONTWRITEBYTECODE": "1",
            "LAMBDA_TASK_ROOT": str(paths[0]),
            "LAMBDA_RUNTIME_DIR": str(paths[-1]),
            "TZ": ":UTC",
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
            "AWS_XRAY_DAEMON_ADDRESS": "169.254.79.129:2000",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_LAMBDA_FUNCTION_NAME": "bench",
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "LAKEHOOK_TABLE_NAME": "bench",
            "POWERTOOLS_SERVICE_NAME": "lakehook",
            "POWERTOOLS_METRICS_NAMESPACE": "Lakehook",
        }
    )
    return env


def _probe(py: str, fn: str, paths: list[Path], parts: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [py, "-S", "-c", PROBE, json.dumps(parts), FIRST_REQUEST.get(fn, "")],
        env=_environment(paths),
        cwd=paths[0],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{fn} failed to import:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _parts(py: str, fn: str, paths: list[Path]) -> dict[str, str]:
    """The parts to import first for ``fn``: those its plain ``import app`` imports (a first, uncounted run),
    less any whose early import changes what the function imports. Powertools' batch utility, say, imports
    its parser's pydantic models only if pydantic is already imported: importing pydantic first would make
    the spool verifier and the poll worker import (and the bench count) 15 modules Lambda never loads for
    them, so for them pydantic is counted in "lakehook + rest"."""
    plain = _probe(py, fn, paths, {})
    parts: dict[str, str] = {}
    for name in plain["parts"]:
        trial = {**parts, name: PARTS[name]}
        if _probe(py, fn, paths, trial)["imported"] == plain["imported"]:
            parts = trial
    return parts


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.0f}"


def measure() -> list[dict[str, Any]]:
    if not (BUILD / "template.yaml").exists():
        raise SystemExit("no .aws-sam/build: run `make build` first")
    py = python312()
    runtime = _runtime_boto3(py)
    functions = _template_functions()
    builds = {"": (BUILD, WORK)}
    if BASE:
        builds["base "] = (Path(BASE).resolve(), WORK / "base")
    paths: dict[str, dict[str, list[Path]]] = {}
    for tag, (build, work) in builds.items():
        fn_layers = _template_functions(build)
        layers = {layer: _host_layer(py, layer, build, work) for names in fn_layers.values() for layer in names}
        paths[tag] = {fn: [build / fn, *(layers[layer] for layer in fn_layers[fn]), runtime] for fn in functions}
    parts = {tag: {fn: _parts(py, fn, paths[tag][fn]) for fn in functions} for tag in builds}
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {tag: {fn: [] for fn in functions} for tag in builds}
    for _ in range(ROUNDS):
        for fn in functions:
            for tag in builds:
                samples[tag][fn].append(_probe(py, fn, paths[tag][fn], parts[tag][fn]))
    rows = []
    for fn, runs in samples[""].items():
        base = samples.get("base ", {}).get(fn)
        times = [r["ms"] for r in runs]
        median = statistics.median(times)
        last = runs[-1]
        rows.append(
            {
                "function": fn,
                "import ms (median)": f"{median:.0f}",
                "min-max": f"{min(times):.0f}-{max(times):.0f}",
                "runs": len(times),
                "goal 300 ms": "met" if median <= GOAL_MS else "MISSED",
                "CPU ms (median)": _median([r["cpu_ms"] for r in runs]),
                **(
                    {
                        "base import ms": _median([r["ms"] for r in base]),
                        "base CPU ms": _median([r["cpu_ms"] for r in base]),
                        "base lakehook + rest": _median([r["steps"]["lakehook"] for r in base]),
                        "base modules": base[-1]["modules"],
                    }
                    if base
                    else {}
                ),
                # CPU time per part, in import order: what is left to lakehook once the three are loaded.
                **{
                    f"of which {name}": _median([r["steps"][name] for r in runs]) if name in parts[""][fn] else "-"
                    for name in PARTS
                },
                "of which lakehook + rest": _median([r["steps"]["lakehook"] for r in runs]),
                "first request adds (CPU ms)": _median([r["first_request_cpu_ms"] for r in runs])
                if runs[-1].get("first_request_cpu_ms") is not None
                else "-",
                "modules": last["modules"],
                "X-Ray SDK": "imported" if last["xray"] else "-",
                "lakehouse / requests": ", ".join(last["heavy"]) or "-",
                "botocore": ("runtime's" if "bench/runtime" in (last["botocore_from"] or "") else "a layer's")
                if last["botocore"]
                else "-",
            }
        )
    return rows


def run() -> list[dict[str, Any]]:
    return measure()


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(measure()), file=sys.stdout)
