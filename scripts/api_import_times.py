"""The two API handlers' cold import from source trees, interleaved, on Python 3.12 (docs/packaging.md, "Cold starts").

    python3 scripts/api_import_times.py --python /tmp/v312/bin/python --rounds 9 BEFORE_TREE AFTER_TREE

Each tree is a checkout (or `git archive` of one): its `functions/<name>` and `src/shared` go first on the path,
then the site-packages of ``--python`` (a 3.12 venv with layers/core/requirements.txt and boto3). Each run is a
fresh `python -S` with the environment Lambda's runtime sets (X-Ray and Powertools take their Lambda paths),
bytecode cached per tree (two uncounted warm-up runs each), so it is the import of compiled modules as from the
built artefacts, though not their layout (bench/coldstart.py measures those). CPU time (`time.process_time`)
is split as the bench splits it: the runtime's boto3, pydantic, Powertools' logger and metrics, then
`import app` ("own"); for a tree whose resolver includes its route modules on first use, also what including
a route module adds to the first request (the push route's, the rule routes', then all the others'). Medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PROBE = r"""
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
steps = {}
for name, stmt in (("boto3", "import boto3"), ("pydantic", "import pydantic, pydantic.main"),
                   ("powertools", "from aws_lambda_powertools import Logger, Metrics")):
    began = time.process_time()
    exec(stmt)
    steps[name] = (time.process_time() - began) * 1000
began = time.process_time()
import app
steps["own"] = (time.process_time() - began) * 1000
took, took_cpu, modules = time.perf_counter() - wall, time.process_time() - cpu, len(sys.modules)
first = {}
if hasattr(app.app, "include_routes"):
    for name, included in (("push", ["events"]), ("rules", ["rules"]), ("others", None)):
        began = time.process_time()
        app.app.include_every_route() if included is None else app.app.include_routes(included)
        first[name] = (time.process_time() - began) * 1000
print(json.dumps({"cpu": took_cpu * 1000, "wall": took * 1000, "steps": steps, "first": first, "modules": modules}))
"""
FUNCTIONS = ("ingest_api", "replay_api")


def run(python: str, site: str, tree: str, function: str) -> dict:
    code = os.path.join(tree, "functions", function)
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.pathsep.join([code, os.path.join(tree, "src", "shared"), site]),
        "PYTHONPYCACHEPREFIX": os.path.join(
            "/tmp", "api-import-pyc", os.path.abspath(tree).strip("/").replace("/", "_")
        ),
        "AWS_LAMBDA_FUNCTION_NAME": function,
        "LAMBDA_TASK_ROOT": code,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "LAKEHOOK_TABLE_NAME": "import-test",
        "POWERTOOLS_SERVICE_NAME": "lakehook",
        "POWERTOOLS_METRICS_NAMESPACE": "Lakehook",
        "TZ": ":UTC",
        "AWS_XRAY_DAEMON_ADDRESS": "169.254.79.129:2000",
    }
    done = subprocess.run([python, "-S", "-c", PROBE], cwd=code, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="a Python 3.12 venv's interpreter")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("trees", nargs="+")
    args = parser.parse_args()
    site = subprocess.run(
        [args.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    results: dict[tuple[str, str], list[dict]] = {(t, f): [] for t in args.trees for f in FUNCTIONS}
    for tree in args.trees:
        for function in FUNCTIONS:
            run(args.python, site, tree, function)
            run(args.python, site, tree, function)
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for _ in range(args.rounds):
        for function in FUNCTIONS:
            for tree in args.trees:
                results[(tree, function)].append(run(args.python, site, tree, function))
    print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for function in FUNCTIONS:
        for tree in args.trees:
            rs = results[(tree, function)]
            med = {k: statistics.median(r[k] for r in rs) for k in ("cpu", "wall")}
            parts = {k: round(statistics.median(r["steps"][k] for r in rs)) for k in rs[0]["steps"]}
            first = {k: round(statistics.median(r["first"][k] for r in rs)) for k in rs[0]["first"]}
            print(
                f"{function} {tree}: CPU {med['cpu']:.0f} ms, wall {med['wall']:.0f} ms "
                f"({min(r['wall'] for r in rs):.0f}-{max(r['wall'] for r in rs):.0f}), modules {rs[0]['modules']}, "
                f"CPU parts {parts}" + (f", first request adds {first}" if first else "")
            )


if __name__ == "__main__":
    main()
