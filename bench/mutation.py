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
- again: ``--again`` re-judges, in a staging folder of its own (``test-output/mutation-again``), only the mutants the
  last full run left alive (survived or no tests) with the tests as they are now, and prints their table (it writes
  nothing to ``bench/results.md``): the way to confirm that new tests kill them without running every mutant again.
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
AGAIN = ROOT / "test-output" / "mutation-again"  # --again: the last run's live mutants, judged by today's tests
ALIVE = ("survived", "no tests")

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


def stage(folder: Path = STAGE, modules: list[str] | None = None) -> Path:
    """A fresh staging folder: the package as ``src/lakehook``, the tests, and mutmut's configuration (mutating
    ``modules``, all of :data:`MODULES` unless told)."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "lakehook").symlink_to(ROOT / "src" / "shared" / "lakehook")
    for name in ALSO:
        (folder / name).symlink_to(ROOT / name)
    quoted = ", ".join
    only = quoted(f'"src/lakehook/{m}"' for m in (MODULES if modules is None else modules))
    deselect = quoted(f'"--deselect={t}"' for t in DESELECT)
    tests = quoted(f'"{t}"' for t in TESTS)
    (folder / "pyproject.toml").write_text(PYPROJECT.format(only=only, tests=tests, deselect=deselect))
    return folder


def staged_env() -> dict[str, str]:
    """The environment without the tree's package on PYTHONPATH (the mutants' must be the one imported)."""
    tree = str(ROOT / "src")
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and not p.startswith(tree)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def mutmut(*args: str, workers: int | None = None, folder: Path = STAGE) -> str:
    """Run ``mutmut`` in a staging folder (the package imported from its mutants, not from the tree)."""
    env = staged_env()
    if workers:  # an option of ``run``, before the mutants' names
        args = (args[0], "--max-children", str(workers), *args[1:])
    command = [sys.executable, "-m", "mutmut", *args]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
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


def changed_lines(mutants: list[str], folder: Path = STAGE) -> dict[str, str]:
    """The line each mutant wrote (the first ``+`` line of its diff)."""
    if not mutants:
        return {}
    done = subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=folder,
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


def workers() -> int:
    return int(os.environ.get("LAKEHOOK_MUTATION_WORKERS", os.cpu_count() or 2))


def results(folder: Path = STAGE) -> dict[str, str]:
    """Each mutant's status in a staging folder's last run (mutant name -> status)."""
    found = (RESULT.match(line) for line in mutmut("results", "--all", "true", folder=folder).splitlines())
    return {f["name"]: f["status"].strip() for f in found if f}


def run(again: bool = True) -> tuple[list[dict[str, object]], list[str]]:
    """Rows of the score per module, and the survivors (name and line); ``again=False`` reads the last run's
    results (an interrupted run's mutants not run yet are counted "not checked")."""
    if again:
        stage()
        mutmut("run", workers=workers())
    return score(results())


def score(statuses: dict[str, str], folder: Path = STAGE) -> tuple[list[dict[str, object]], list[str]]:
    """Rows of the score per module (and all), and the survivors, each with the line it changed."""
    by_module: dict[str, Counter[str]] = {m: Counter() for m in MODULES}
    for name, status in statuses.items():
        by_module.setdefault(module_of(name), Counter())[status] += 1
    rows = [row(module, MODULES.get(module, ""), counts) for module, counts in by_module.items() if counts]
    rows.append(row("all", "", sum(by_module.values(), Counter())))
    survivors = [name for name, status in statuses.items() if status == "survived"]
    lines = changed_lines(survivors, folder)
    return rows, [f"- `{name}`: `{lines.get(name, '')}`" for name in survivors]


def judge_again() -> tuple[list[dict[str, object]], list[str]]:
    """The last full run's live mutants (survived, no tests), judged again in :data:`AGAIN` by today's tests."""
    alive = [name for name, status in results().items() if status in ALIVE]
    if not alive:
        return [row("all", "", Counter())], []
    stage(AGAIN, sorted({module_of(name) for name in alive}))
    mutmut("run", *alive, workers=workers(), folder=AGAIN)
    judged = results(AGAIN)
    return score({name: judged.get(name, "not checked") for name in alive}, AGAIN)


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
    if "--again" in argv:
        rows, survivors = judge_again()
        print(markdown_table(rows))
        print("\n".join(survivors) or "(no survivors)")
        print(f"took {time.perf_counter() - began:.0f} s; load average (1 min) {load_before:.2f} before")
        return 0
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
