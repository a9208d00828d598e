"""Mutation: mutmut 3 over the modules that guard the promises, each killed or not by the unit tests that cover it.

- what: `make mutation` (not part of `make test`) runs mutmut (pinned in the Makefile) over the modules below, the
  ones that guard claims, advance-only state, signatures and producer scope, idempotency keys, late versions,
  partition keys and coverage merges, with the fast unit tests that exercise them (`TESTS`): mutmut runs, for each
  mutant, only the tests that called its function. Hypothesis runs its `mutation` profile (10 examples,
  derandomized, no example database) so a rerun on the same code gives the same score.
- where: a staging folder (`test-output/mutation`) in which `src/lakehook` is the package and `tests` the tests, the
  layout mutmut imports mutants from; the tree itself is never changed. mutmut's output goes to
  `test-output/mutation.log` (follow a run's progress there).
- score: killed / (killed + survived + timeout), a timeout counted as detected (mutmut's own score); the survivors
  are listed under the table, each with the line mutmut changed and, for an equivalent mutant (one no test can
  tell from the code), why (`bench/mutation_equivalents.py`); the mutants no test reaches are named too.
- only: ``--only domain/partitions.py wire/partition_keys.py`` judges those modules alone and writes their rows,
  keeping every other module's row (and survivors) from the run that judged it; each row names its run, and each
  run is described (command, date, load) above the table.
- again: ``--again`` re-judges, in a staging folder of its own (``test-output/mutation-again``), only the mutants
  the section lists alive (survivors, those no test reached and those a stopped run did not judge; with ``--only``,
  of those modules; with ``--mutants PART…``, those whose names hold a part) with the tests as they are now, and
  prints their table; ``--write`` also folds the verdicts into the section (a row then names both runs): the way to
  confirm that new tests kill them without running every mutant again.
- never ending: a mutant that loops for ever runs to mutmut's CPU limit (30 times its tests' traced time), which at
  nice 19 on a busy machine can be an hour; judge such a mutant alone with a lower limit,
  ``LAKEHOOK_MUTATION_TIMEOUT_MULTIPLIER=1 python -m bench.mutation --again --write --mutants NAME`` (any limit ends
  it; a mutant that ends may time out falsely under it, so never give it to others).
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
from dataclasses import dataclass, field
from pathlib import Path

from bench.mutation_equivalents import EQUIVALENT
from bench.run import markdown_table, read_section, replace_section

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / "test-output" / "mutation"
AGAIN = ROOT / "test-output" / "mutation-again"  # --again: the section's live mutants, judged by today's tests
LOG = ROOT / "test-output" / "mutation.log"
GONE = "no longer made"  # --again: a live mutant of code removed since its run
TIMEOUT_MULTIPLIER = "LAKEHOOK_MUTATION_TIMEOUT_MULTIPLIER"  # set it only to judge mutants that never end

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
    "tests/unit/test_partition_keys.py",
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
    config = PYPROJECT.format(only=only, tests=tests, deselect=deselect)
    if TIMEOUT_MULTIPLIER in os.environ:  # mutmut's CPU limit: (traced estimate + 1 s) * 2 * this (default 15)
        config = config.replace(
            "[tool.mutmut]\n", f"[tool.mutmut]\ntimeout_multiplier = {float(os.environ[TIMEOUT_MULTIPLIER])}\n"
        )
    (folder / "pyproject.toml").write_text(config)
    return folder


def staged_env() -> dict[str, str]:
    """The environment without the tree's package on PYTHONPATH (the mutants' must be the one imported)."""
    tree = str(ROOT / "src")
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and not p.startswith(tree)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


@dataclass
class Load:
    """The 1-minute load average sampled while a run goes on (every 30 s), to say how busy the machine was."""

    samples: list[float] = field(default_factory=list)

    def sample(self) -> None:
        self.samples.append(os.getloadavg()[0])

    def __str__(self) -> str:
        if not self.samples:
            return "not sampled"
        return f"{min(self.samples):.2f} to {max(self.samples):.2f} over {len(self.samples)} samples"


def mutmut(*args: str, workers: int | None = None, folder: Path = STAGE, load: Load | None = None) -> str:
    """Run ``mutmut`` in a staging folder (the package imported from its mutants, not from the tree); its output
    goes to :data:`LOG` as it runs, and is answered when it ends."""
    if workers:  # an option of ``run``, before the mutants' names
        args = (args[0], "--max-children", str(workers), *args[1:])
    command = [sys.executable, "-m", "mutmut", *args]
    LOG.parent.mkdir(parents=True, exist_ok=True)
    with LOG.open("w") as log:
        child = subprocess.Popen(command, cwd=folder, env=staged_env(), stdout=log, stderr=subprocess.STDOUT, text=True)
        while True:
            if load is not None:
                load.sample()
            try:
                child.wait(timeout=30)
                break
            except subprocess.TimeoutExpired:
                continue
    output = LOG.read_text()
    if child.returncode != 0:
        raise RuntimeError(f"mutmut {' '.join(args[:3])} failed ({child.returncode}):\n{output[-4000:]}")
    return output


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
    found = (RESULT.match(line) for line in _mutmut_results(folder).splitlines())
    return {f["name"]: f["status"].strip() for f in found if f}


def _mutmut_results(folder: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=folder,
        env=staged_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"mutmut results failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


# --- the section: rows per module, each from the run that judged it ---------------------------------------------


@dataclass
class Section:
    """What the section records: each module's counts and the run they come from, each run's description, the
    survivors (name -> the line it changed), the mutants no test reached, and the notes written under them."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    run_of: dict[str, str] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)
    survivors: dict[str, str] = field(default_factory=dict)
    untested: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # mutants a run made but did not judge (stopped first)
    gone: list[str] = field(default_factory=list)  # live mutants mutmut no longer makes: their code was removed
    notes: str = ""  # written by hand under the lists (what is left and why); kept as written

    def take(self, label: str, about: str, statuses: dict[str, str], lines: dict[str, str]) -> None:
        """A run's verdicts replace the rows (and survivors) of the modules it judged."""
        judged = {module_of(name) for name in statuses}
        for module in judged:
            self.counts[module] = Counter()
            self.run_of[module] = label
        self.survivors = {n: line for n, line in self.survivors.items() if module_of(n) not in judged}
        self.untested = [n for n in self.untested if module_of(n) not in judged]
        self.unchecked = [n for n in self.unchecked if module_of(n) not in judged]
        for name, status in statuses.items():
            self.counts[module_of(name)][status] += 1
        self.survivors.update({n: lines.get(n, "") for n, s in statuses.items() if s == "survived"})
        self.untested += [n for n, s in statuses.items() if s == "no tests"]
        self.unchecked += [n for n, s in statuses.items() if s == "not checked"]
        self.runs[label] = about

    def fold(self, label: str, about: str, statuses: dict[str, str], lines: dict[str, str]) -> None:
        """A re-judgement of live mutants: each moves from its old verdict to its new one in its module's row."""
        for name, status in statuses.items():
            module = module_of(name)
            self.counts[module][self._forget(name)] -= 1
            if status == GONE:  # no longer a mutant of the module: out of its counts, named below the lists
                self.gone.append(name)
                continue
            self.counts[module][status] += 1
            if status == "survived":
                self.survivors[name] = lines.get(name, "")
            elif status == "no tests":
                self.untested.append(name)
            elif status == "not checked":
                self.unchecked.append(name)
            if label not in self.run_of[module].split(" + "):
                self.run_of[module] = f"{self.run_of[module]} + {label}"
        self.runs[label] = about

    def _forget(self, name: str) -> str:
        """Take a live mutant off its list, answering the verdict it had."""
        if self.survivors.pop(name, None) is not None:
            return "survived"
        for status, names in (("no tests", self.untested), ("not checked", self.unchecked)):
            if name in names:
                names.remove(name)
                return status
        raise ValueError(f"{name} is not alive in the section")

    def alive(self, modules: list[str] | None = None) -> list[str]:
        """The mutants no test has killed yet: survived, not reached by a test, or not judged."""
        names = [*self.survivors, *self.untested, *self.unchecked]
        return sorted(n for n in names if modules is None or module_of(n) in modules)

    def table(self) -> str:
        order = [m for m in MODULES if m in self.counts] + sorted(set(self.counts) - set(MODULES))
        rows = [row(m, MODULES.get(m, ""), self.counts[m], self.run_of.get(m, "")) for m in order]
        rows.append(row("all", "", sum((self.counts[m] for m in order), Counter()), ""))
        return markdown_table(rows)

    def listed(self) -> str:
        """The survivors, each with its line (and why, for an equivalent one), and the mutants no test reaches."""
        survivors = "\n".join(survivor_line(n, line) for n, line in sorted(self.survivors.items())) or "(none)"
        untested = ", ".join(f"`{n}`" for n in sorted(self.untested)) or "(none)"
        unchecked = ", ".join(f"`{n}`" for n in sorted(self.unchecked)) or "(none)"
        gone = ", ".join(f"`{n}`" for n in sorted(self.gone)) or "(none)"
        return (
            f"Survivors ({len(self.survivors)}), each with the line mutmut changed; an equivalent one with why no "
            f"test can kill it:\n\n{survivors}\n\nNo test reaches ({len(self.untested)}): {untested}\n\n"
            f"Not judged ({len(self.unchecked)}): {unchecked}\n\n"
            f"No longer made ({len(self.gone)}; the code they changed was removed since, so they left the counts): "
            f"{gone}\n"
        )

    def render(self) -> str:
        title, *rest = (__doc__ or "").strip().splitlines()
        used = {part for module in self.counts for part in self.run_of.get(module, "").split(" + ")}
        runs = "\n".join(f"- {label}: {about}" for label, about in self.runs.items() if label in used)
        text = "\n".join(rest).strip()
        notes = f"\n{self.notes}\n" if self.notes else ""
        return (
            f"## mutation: {title}\n\n{text}\n\nRuns (each row names the run its figures come from):\n\n{runs}\n\n"
            f"{self.table()}\n{self.listed()}{notes}"
        )


def survivor_line(name: str, line: str) -> str:
    known = EQUIVALENT.get(name)
    why = f" — equivalent: {known[1]}" if known and known[0] == line else ""
    return f"- `{name}`: `{line}`{why}"


TABLE_ROW = re.compile(r"^\| (?P<module>[^|]+?) \|")
SURVIVOR = re.compile(r"^- `(?P<name>[^`]+__mutmut_\d+)`: `(?P<line>.*?)`(?: — equivalent: .*)?$")
RUN = re.compile(r"^- (?P<label>(?:full|only|again) \d{4}-\d\d-\d\d \d\d:\d\d): (?P<about>.+)$")
UNTESTED = re.compile(r"`([^`]+__mutmut_\d+)`")


def parse_section(text: str) -> Section:
    """The section as written (the table's rows back into counts; a section written before rows named their run is
    one full run, described by the paragraph above its table); what follows the lists is notes, kept."""
    found = Section()
    lines = text.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("| module |"))
    columns = [c.strip() for c in lines[header].strip("|").split("|")]
    for ln in lines[header + 2 :]:
        if not ln.startswith("| "):
            break
        cells = dict(zip(columns, (c.strip() for c in ln.strip().strip("|").split("|")), strict=True))
        if cells["module"] != "all":
            found.counts[cells["module"]] = counts_of(cells)
            found.run_of[cells["module"]] = cells.get("run", "")
    last = header
    for i, ln in enumerate(lines):
        if (run := RUN.match(ln)) is not None:
            found.runs[run["label"]] = run["about"]
        elif (survivor := SURVIVOR.match(ln)) is not None:
            found.survivors[survivor["name"]], last = survivor["line"], i
        elif ln.startswith("No test reaches"):
            found.untested, last = UNTESTED.findall(ln), i
        elif ln.startswith("Not judged"):
            found.unchecked, last = UNTESTED.findall(ln), i
        elif ln.startswith("No longer made"):
            found.gone, last = UNTESTED.findall(ln), i
    found.notes = "\n".join(lines[last + 1 :]).strip()
    if not found.runs:  # the old layout: one run, the paragraph right above the table
        about = lines[header - 2]
        when = re.search(r"Run on (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", about)
        label = f"full {when[1] if when else 'earlier'}"
        found.runs[label] = about
        found.run_of = dict.fromkeys(found.counts, label)
    return found


def counts_of(cells: dict[str, str]) -> Counter[str]:
    counts: Counter[str] = Counter({k: int(cells[k]) for k in ("killed", "survived", "timeout")})
    for part in cells["other"].split(", "):
        status, _, number = part.rpartition(" ")
        if status:
            counts[status] += int(number)
    return counts


def row(module: str, promise: str, counts: Counter[str], run: str) -> dict[str, object]:
    detected = counts["killed"] + counts["timeout"]
    tested = detected + counts["survived"]
    others = {k: v for k, v in counts.items() if k not in ("killed", "survived", "timeout") and v}
    return {
        "module": module,
        "guards": promise,
        "run": run,
        "mutants": sum(counts.values()),
        "killed": counts["killed"],
        "survived": counts["survived"],
        "timeout": counts["timeout"],
        "other": ", ".join(f"{k} {v}" for k, v in sorted(others.items())) or "0",
        "score": f"{100 * detected / tested:.1f} %" if tested else "-",
    }


# --- the commands ---------------------------------------------------------------------------------------------------


def recorded() -> Section:
    text = read_section("mutation")
    return parse_section(text) if text else Section()


def about(command: str, began: float, load_before: float, load: Load, note: str) -> str:
    """A run's description: the command, the date, the time it took, the machine and its load."""
    niceness = os.nice(0)
    knobs = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("LAKEHOOK_MUTATION_"))
    command = f"{knobs} {command}" if knobs else command
    return (
        f"{note}`{command}`{f' under nice -n {niceness}' if niceness else ''}, ended "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, took {time.perf_counter() - began:.0f} s; "
        f"{os.cpu_count()} cores; load average (1 min) {load_before:.2f} before, {load} during, "
        f"{os.getloadavg()[0]:.2f} after."
    )


def judge(modules: list[str] | None, load: Load) -> tuple[dict[str, str], dict[str, str]]:
    """Run mutmut over ``modules`` (every module of :data:`MODULES` unless told): each mutant's status, and the
    line each survivor changed."""
    stage(STAGE, modules)
    mutmut("run", workers=workers(), load=load)
    statuses = results()
    return statuses, changed_lines([n for n, s in statuses.items() if s == "survived"])


def judge_again(alive: list[str], load: Load) -> tuple[dict[str, str], dict[str, str]]:
    """``alive`` judged again in :data:`AGAIN` by today's tests (a mutant mutmut no longer makes is :data:`GONE`)."""
    stage(AGAIN, sorted({module_of(name) for name in alive}))
    mutmut("run", *alive, workers=workers(), folder=AGAIN, load=load)
    judged = results(AGAIN)
    statuses = {name: judged.get(name, GONE) for name in alive}
    return statuses, changed_lines([n for n, s in statuses.items() if s == "survived"], AGAIN)


def listed(argv: list[str], flag: str) -> list[str] | None:
    """The arguments after ``flag`` up to the next option, or None without the flag."""
    if flag not in argv:
        return None
    values = []
    for arg in argv[argv.index(flag) + 1 :]:
        if arg.startswith("--"):
            break
        values.append(arg)
    return values


def options(argv: list[str]) -> tuple[list[str] | None, str]:
    """``--only`` modules (each one of :data:`MODULES`) and ``--note`` text."""
    modules = listed(argv, "--only")
    if modules is not None:
        unknown = [m for m in modules if m not in MODULES]
        if not modules or unknown:
            raise SystemExit(f"--only takes modules of {', '.join(MODULES)}; not {', '.join(unknown) or 'none'}")
    note = argv[argv.index("--note") + 1] + " " if "--note" in argv else ""
    return modules, note


def main(argv: list[str]) -> int:
    """``--only MODULE…``: judge those modules alone. ``--again [--write] [--mutants NAME…]``: re-judge the live
    mutants (of the ``--only`` modules, or those whose names hold one of the ``--mutants`` parts). ``--report``:
    write the section from the staging folder's last run without running mutmut again (``--note TEXT`` says why,
    e.g. an interrupted run)."""
    modules, note = options(argv)
    began, load_before, load = time.perf_counter(), os.getloadavg()[0], Load()
    section, when = recorded(), time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    command = "python -m bench.mutation " + " ".join(a for a in argv if a not in ("--note", note.strip()))
    if "--again" in argv:
        alive = section.alive(modules)
        if (names := listed(argv, "--mutants")) is not None:  # only the live mutants whose names hold one of these
            alive = [name for name in alive if any(part in name for part in names)]
        statuses, lines = judge_again(alive, load) if alive else ({}, {})
        again = Section()
        again.take("again", "", statuses, lines)
        print(f"{again.table()}\n{again.listed()}")
        if "--write" in argv:
            section.fold(f"again {when}", about(command.strip(), began, load_before, load, note), statuses, lines)
            replace_section("mutation", section.render())
        return 0
    if "--report" in argv:
        statuses = results()
        lines = changed_lines([n for n, s in statuses.items() if s == "survived"])
        label = f"{'only' if len({module_of(n) for n in statuses}) < len(MODULES) else 'full'} {when}"
        section.take(label, f"{note}reported with `--report` from the last run's results.", statuses, lines)
    else:
        statuses, lines = judge(modules, load)
        label = f"{'only' if modules else 'full'} {when}"
        shown = "make mutation" if modules is None else command.strip()
        section.take(label, about(shown, began, load_before, load, note), statuses, lines)
    replace_section("mutation", section.render())
    print(f"{section.table()}\n{section.listed()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
