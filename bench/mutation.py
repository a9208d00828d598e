"""Mutation: mutmut 3 over the modules that guard the promises, each killed or not by the unit tests that cover it.

- what: `make mutation` (not part of `make test`) runs mutmut (pinned in the Makefile) over the modules below, the
  ones that guard claims, advance-only state, signatures and producer scope, idempotency keys, late versions,
  partition keys and coverage merges, with the fast unit tests that exercise them (`TESTS`): mutmut runs, for each
  mutant, only the tests that called its function. Hypothesis runs its `mutation` profile (10 examples,
  derandomized, no example database) so a rerun on the same code gives the same score.
- where: a staging folder (`test-output/mutation`) in which `src/lakehook` is the package and `tests` the tests, the
  layout mutmut imports mutants from; the tree itself is never changed.
- score: killed / (killed + survived + timeout), a timeout counted as detected (mutmut's own score); the survivors
  are listed under the table, each with the line mutmut changed.
- left out: the DynamoDB adapters (the trigger store's cursor condition is held by its contract suite on moto, whose
  tests take seconds each under mutation); the resolver and evaluation, whose tests are minutes long.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench.run import markdown_table, replace_section

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / "test-output" / "mutation"

# module (under lakehook/) -> the promise it guards
MODULES: dict[str, str] = {
    "domain/signing.py": "signatures",
    "domain/producers.py": "producer scope",
    "domain/requests.py": "idempotency keys",
    "domain/planned_claims.py": "claims",
    "domain/state.py": "advance-only state",
    "domain/late_versions.py": "late versions",
    "domain/partitions.py": "partition keys",
    "wire/partition_keys.py": "partition keys (escaping)",
    "domain/coverage.py": "coverage merges",
}

# the fast unit tests that cover them (state machines and e2e are marked slow and left out)
TESTS = [
    "tests/unit/test_signing.py",
    "tests/unit/test_client_signing.py",
    "tests/unit/test_producer_secrets.py",
    "tests/unit/test_replay_choices.py",
    "tests/unit/test_request_keys.py",
    "tests/unit/test_trigger_keys.py",
    "tests/unit/test_lanes.py",
    "tests/unit/test_state_advance.py",
    "tests/unit/test_each_version.py",
    "tests/unit/test_each_version_gates.py",
    "tests/unit/test_partitions.py",
    "tests/unit/test_partition_coverage.py",
    "tests/unit/test_coverage.py",
    "tests/unit/test_coverage_progress.py",
]

# what the tests read beside themselves (tests/support.py reads the template), copied beside the mutants
ALSO = ["tests", "template.yaml"]

# tests about the tree's layout, not the code's behaviour (the staging folder has another)
DESELECT = ["tests/unit/test_client_signing.py::test_the_client_side_imports_nothing_of_the_server"]

PYPROJECT = """\
[tool.mutmut]
source_paths = ["src/lakehook"]
also_copy = ["template.yaml"]
only_mutate = [{only}]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-m", "not slow", "--hypothesis-profile=mutation", {deselect}]
pytest_add_cli_args_test_selection = [{tests}]
use_git_change_detection = false

[tool.pytest.ini_options]
pythonpath = ["."]
markers = ["integration: moto", "e2e: local stack", "slow: left out", "airflow_real: opt-in"]
filterwarnings = ["ignore::DeprecationWarning"]
"""


def stage() -> Path:
    """A fresh staging folder: the package as ``src/lakehook``, the tests, and mutmut's configuration."""
    shutil.rmtree(STAGE, ignore_errors=True)
    (STAGE / "src").mkdir(parents=True)
    (STAGE / "src" / "lakehook").symlink_to(ROOT / "src" / "shared" / "lakehook")
    for name in ALSO:
        (STAGE / name).symlink_to(ROOT / name)
    quoted = ", ".join
    only = quoted(f'"src/lakehook/{m}"' for m in MODULES)
    deselect = quoted(f'"--deselect={t}"' for t in DESELECT)
    tests = quoted(f'"{t}"' for t in TESTS)
    (STAGE / "pyproject.toml").write_text(PYPROJECT.format(only=only, tests=tests, deselect=deselect))
    return STAGE


def staged_env() -> dict[str, str]:
    """The environment without the tree's package on PYTHONPATH (the mutants' must be the one imported)."""
    tree = str(ROOT / "src")
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and not p.startswith(tree)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def mutmut(*args: str, workers: int | None = None) -> str:
    """Run ``mutmut`` in the staging folder (the package imported from its mutants, not from the tree)."""
    env = staged_env()
    command = [sys.executable, "-m", "mutmut", *args]
    if workers:
        command += ["--max-children", str(workers)]
    done = subprocess.run(command, cwd=STAGE, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        output = f"{done.stdout}\n{done.stderr}"[-4000:]  # its spinner writes a line a tick
        raise RuntimeError(f"mutmut {' '.join(args)} failed ({done.returncode}):\n{output}")
    return done.stdout


RESULT = re.compile(r"^\s*(?P<name>\S+__mutmut_\d+): (?P<status>.+)$")


def module_of(mutant: str) -> str:
    """``lakehook.domain.signing.x_verify__mutmut_3`` -> ``domain/signing.py``."""
    dotted = mutant.split(".x_")[0].split(".xǁ")[0]
    return dotted.removeprefix("lakehook.").replace(".", "/") + ".py"


# Each survivor's diff, all in one process (``mutmut show`` starts one per mutant).
SHOW = """
import json, sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
print(json.dumps({n: get_diff_for_mutant(n, path=find_mutant(n).path) for n in json.load(sys.stdin)}))
"""


def changed_lines(mutants: list[str]) -> dict[str, str]:
    """The line each mutant wrote (the first ``+`` line of its diff)."""
    if not mutants:
        return {}
    done = subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=STAGE,
        env=staged_env(),
        input=json.dumps(mutants),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"reading the survivors' diffs failed:\n{done.stderr[-4000:]}")
    lines: dict[str, str] = {}
    for name, diff in json.loads(done.stdout.strip().splitlines()[-1]).items():
        added = (ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
        lines[name] = next(added, "").replace("|", "\\|")[:120]
    return lines


def run(again: bool = True) -> tuple[list[dict[str, object]], list[str]]:
    """Rows of the score per module, and the survivors (name and line); ``again=False`` reads the last run's
    results (an interrupted run's mutants not run yet are counted "not checked")."""
    if again:
        stage()
        mutmut("run", workers=int(os.environ.get("LAKEHOOK_MUTATION_WORKERS", os.cpu_count() or 2)))
    statuses: dict[str, Counter[str]] = {m: Counter() for m in MODULES}
    survivors: list[str] = []
    for line in mutmut("results", "--all", "true").splitlines():
        found = RESULT.match(line)
        if not found:
            continue
        name, status = found["name"], found["status"].strip()
        statuses.setdefault(module_of(name), Counter())[status] += 1
        if status == "survived":
            survivors.append(name)
    rows = [row(module, MODULES.get(module, ""), counts) for module, counts in statuses.items()]
    rows.append(row("all", "", sum(statuses.values(), Counter())))
    lines = changed_lines(survivors)
    return rows, [f"- `{name}`: `{lines.get(name, '')}`" for name in survivors]


def row(module: str, promise: str, counts: Counter[str]) -> dict[str, object]:
    detected = counts["killed"] + counts["timeout"]
    tested = detected + counts["survived"]
    others = {k: v for k, v in counts.items() if k not in ("killed", "survived", "timeout")}
    return {
        "module": module,
        "guards": promise,
        "mutants": sum(counts.values()),
        "killed": counts["killed"],
        "survived": counts["survived"],
        "timeout": counts["timeout"],
        "other": ", ".join(f"{k} {v}" for k, v in sorted(others.items())) or "0",
        "score": f"{100 * detected / tested:.1f} %" if tested else "-",
    }


def main(argv: list[str]) -> int:
    """``--report``: write the section from the last run's results without running mutmut again (``--note TEXT``
    says why, e.g. an interrupted run)."""
    began, load_before = time.perf_counter(), os.getloadavg()[0]
    again = "--report" not in argv
    rows, survivors = run(again=again)
    title, *rest = (__doc__ or "").strip().splitlines()
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    took = f"took {time.perf_counter() - began:.0f} s" if again else "reported with --report from the last run"
    note = argv[argv.index("--note") + 1] + " " if "--note" in argv else ""
    provenance = (
        f"{note}Command: `make mutation` (`python -m bench.mutation`). Run on {when} UTC, {took}; "
        f"{os.cpu_count()} cores; load average (1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after."
    )
    listed = "\n".join(survivors) if survivors else "(none)"
    text = "\n".join(rest).strip()
    replace_section(
        "mutation",
        f"## mutation: {title}\n\n{text}\n\n{provenance}\n\n{markdown_table(rows)}\nSurvivors:\n\n{listed}\n",
    )
    print(markdown_table(rows))
    print(f"{len(survivors)} survivors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
