"""bench.mutation's section: a run of some modules replaces their rows only, each row names its run, a re-judgement
moves each mutant from its old verdict to its new one, and the notes written under the lists are kept."""

from __future__ import annotations

from collections import Counter

import pytest
from bench.mutation import counts_of, options, parse_section

OLD = """## mutation: Mutation: a title

- what: text

The full run, stopped early. Command: `make mutation`. Run on 2026-12-07 20:24 UTC, reported with --report.

| module | guards | mutants | killed | survived | timeout | other | score |
|---|---|---|---|---|---|---|---|
| domain/signing.py | signatures | 4 | 2 | 1 | 0 | no tests 1 | 66.7 % |
| domain/partitions.py | partition keys | 3 | 0 | 0 | 0 | not checked 3 | - |
| all |  | 7 | 2 | 1 | 0 | no tests 1, not checked 3 | 66.7 % |

Survivors:

- `lakehook.domain.signing.x_verify__mutmut_13`: `expected = x`

Re-judged by hand: what is left, and why.
"""

SIGNING = "lakehook.domain.signing.x_verify__mutmut_"
PARTITIONS = "lakehook.domain.partitions.x_format_partition_key__mutmut_"


def test_an_old_section_reads_as_one_full_run_with_its_notes() -> None:
    old = parse_section(OLD)
    assert old.counts["domain/signing.py"] == Counter({"killed": 2, "survived": 1, "no tests": 1, "timeout": 0})
    assert old.run_of == dict.fromkeys(["domain/signing.py", "domain/partitions.py"], "full 2026-12-07 20:24")
    assert old.survivors == {f"{SIGNING}13": "expected = x"}
    assert old.notes == "Re-judged by hand: what is left, and why."
    again = parse_section(old.render())
    assert (again.counts, again.run_of, again.survivors, again.notes) == (
        old.counts,
        old.run_of,
        old.survivors,
        old.notes,
    )


def test_a_run_of_some_modules_replaces_their_rows_and_keeps_the_others() -> None:
    section = parse_section(OLD)
    judged = {f"{PARTITIONS}1": "killed", f"{PARTITIONS}2": "survived", f"{PARTITIONS}3": "no tests"}
    section.take("only 2026-12-07 23:00", "`python -m bench.mutation --only …`", judged, {f"{PARTITIONS}2": "y"})
    assert section.counts["domain/partitions.py"] == Counter({"killed": 1, "survived": 1, "no tests": 1})
    assert section.run_of["domain/partitions.py"] == "only 2026-12-07 23:00"
    assert section.run_of["domain/signing.py"] == "full 2026-12-07 20:24"
    assert section.alive() == sorted([f"{PARTITIONS}2", f"{PARTITIONS}3", f"{SIGNING}13"])
    assert section.alive(["domain/partitions.py"]) == [f"{PARTITIONS}2", f"{PARTITIONS}3"]
    text = section.render()
    assert "- full 2026-12-07 20:24: The full run" in text and "- only 2026-12-07 23:00: `python" in text
    assert "| domain/signing.py | signatures | full 2026-12-07 20:24 | 4 | 2 | 1 | 0 | no tests 1 | 66.7 % |" in text
    assert "| all |  |  | 7 | 3 | 2 | 0 | no tests 2 | 60.0 % |" in text


def test_a_rejudgement_moves_each_mutant_to_its_new_verdict() -> None:
    section = parse_section(OLD)
    section.take("only 2026-12-07 23:00", "x", {f"{PARTITIONS}2": "survived", f"{PARTITIONS}3": "no tests"}, {})
    section.fold("again 2026-12-07 23:30", "y", {f"{PARTITIONS}2": "killed", f"{PARTITIONS}3": "survived"}, {})
    assert section.counts["domain/partitions.py"] == Counter({"killed": 1, "survived": 1, "no tests": 0})
    assert section.run_of["domain/partitions.py"] == "only 2026-12-07 23:00 + again 2026-12-07 23:30"
    assert section.alive(["domain/partitions.py"]) == [f"{PARTITIONS}3"] and section.untested == []
    reread = parse_section(section.render())
    assert reread.run_of == section.run_of and set(reread.runs) == {
        "full 2026-12-07 20:24",
        "only 2026-12-07 23:00",
        "again 2026-12-07 23:30",
    }


def test_the_other_column_reads_back_into_counts() -> None:
    cells = {"killed": "3", "survived": "1", "timeout": "2", "other": "no tests 4, not checked 5"}
    assert counts_of(cells) == Counter({"killed": 3, "survived": 1, "timeout": 2, "no tests": 4, "not checked": 5})


def test_only_takes_the_modules_it_knows() -> None:
    assert options(["--only", "domain/partitions.py", "wire/partition_keys.py", "--note", "n"]) == (
        ["domain/partitions.py", "wire/partition_keys.py"],
        "n ",
    )
    with pytest.raises(SystemExit):
        options(["--only", "domain/nothing.py"])
    with pytest.raises(SystemExit):
        options(["--only", "--again"])


def test_a_live_mutant_of_removed_code_leaves_its_modules_counts() -> None:
    section = parse_section(OLD)
    section.fold("again 2026-12-07 23:30", "y", {f"{SIGNING}13": "no longer made"}, {})
    assert section.counts["domain/signing.py"] == Counter({"killed": 2, "no tests": 1})
    assert section.alive() == [] and section.gone == [f"{SIGNING}13"]
    assert parse_section(section.render()).gone == [f"{SIGNING}13"]
