"""Every ``lakehook`` command shown in docs/*.md and the README runs against a local stack (example config).

Commands are taken from fenced ``bash`` blocks (lines starting with ``lakehook``) and run in document
order, in-process, with ``$VARIABLES`` expanded as a shell would (``LAKEHOOK_URL``, ``LAKEHOOK_ADMIN_TOKEN``,
``LAKEHOOK_PRODUCER_SECRET`` and ``TRIGGER_KEY`` are set, as the docs tell the reader to).
``lakehook local up`` itself blocks; tests/e2e/test_local_up.py runs it.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
import requests
import yaml

from lakehook.client import PushClient
from tests.e2e.cli_support import EXAMPLE, ROOT, cli_stack, run_cli, wait_for

DOCS = ROOT / "docs"
# Run the pages that build on each other in reading order; any other page after them.
ORDER = ["cli.md", "rules.md", "operations.md"]
# Run on a stack of their own, from empty (tests/e2e/test_tutorial.py), not after the example config.
OWN_TEST = {"tutorial.md"}
SECRET_REF = re.compile(r"(?:secretRef|credentialsRef|tokenRef): ([\w/.@+=-]+)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def pages() -> list[Path]:
    found = sorted(
        (p for p in DOCS.glob("*.md") if p.name not in OWN_TEST),
        key=lambda p: (ORDER.index(p.name) if p.name in ORDER else len(ORDER), p.name),
    )
    return [*found, ROOT / "README.md"]  # the README's commands too, after the docs have applied the example


def blocks(page: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text(encoding="utf-8")) if lang == language]


def commands() -> list[tuple[str, str]]:
    found = []
    for page in pages():
        for body in blocks(page, "bash"):
            for line in body.splitlines():
                line = line.strip()
                if line.startswith("lakehook ") and not line.startswith("lakehook local up"):
                    found.append((page.name, line))
    return found


def test_the_docs_show_commands_for_every_cli_command() -> None:
    shown = {shlex.split(line)[1 if not line.startswith("lakehook --") else 3] for _, line in commands()}
    assert {"apply", "push", "state", "explain", "triggers", "trigger", "retry", "replay", "coverage"} <= shown
    assert {"rules", "assets", "producers", "aliases", "watermarks", "complete", "evaluate", "watch", "secret"} <= shown


def test_every_documented_command_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    with cli_stack() as stack:
        applied = run_cli(["--output", "json", "apply", "-f", str(EXAMPLE.relative_to(ROOT))])
        assert applied.code == 0, applied.err
        secret = next(c["secret"] for c in applied.json()["changes"] if c["kind"] == "producer")
        monkeypatch.setenv("LAKEHOOK_PRODUCER_SECRET", secret)
        writer = PushClient(stack.api_url, "ods-writer", secret)
        writer.send(
            {"eventType": "SNAPSHOT_COMMITTED", "assetKey": "paimon://lake/ods_db/ods_order_latest", "snapshotId": 1},
            {"eventType": "SNAPSHOT_COMMITTED", "assetKey": "paimon://lake/ods_db/ods_payment_latest", "snapshotId": 1},
        )
        listing = ["--output", "json", "triggers", "--rule", "dwd_trade_event_fact"]
        triggers = wait_for(lambda: run_cli(listing).json()["items"])
        assert triggers, "the example rule never triggered"
        monkeypatch.setenv("TRIGGER_KEY", triggers[0]["triggerKey"])
        paths = requests.get(f"{stack.api_url}/openapi.json", timeout=10).json()["paths"]
        has_replay = "/triggers/{triggerKey}/replay" in paths

        for page, line in commands():
            assert not re.search(r"[|;&><]", line), f"{page}: keep documented commands single and testable: {line}"
            argv = shlex.split(os.path.expandvars(line))[1:]
            command = next(a for a in argv if not a.startswith("-") and a not in ("json", "text"))
            if command == "replay" and not has_replay:
                continue  # the replay route is not deployed in this tree yet
            ran = run_cli(argv)
            # retry refuses (exit 1) the documented trigger, which succeeded: only a FAILED one is retried
            allowed = {"coverage": (0, 3), "replay": (0, 1), "retry": (0, 1)}.get(command, (0,))
            assert ran.code in allowed, f"{page}: `{line}` exited {ran.code}: {ran.err or ran.out}"
            assert ran.out.strip(), f"{page}: `{line}` printed nothing"
            if command == "push":
                # The docs are read at a person's pace: the resolver has caught up before the next command.
                # (ALL_UPDATED coalesces what arrives together, so a lagging resolver could pin other versions.)
                assert stack.wait_idle(30), "the stream was not drained"

        # what rules.md's worked example promises: one trigger pinning orders@1002 and payments@2002
        def pinned() -> list[dict[str, int]]:
            items = run_cli(listing).json()["items"]
            return [{i["assetKey"]: i["snapshotId"] for i in t["inputs"]} for t in items]

        promised = {"paimon://lake/ods_db/ods_order_latest": 1002, "paimon://lake/ods_db/ods_payment_latest": 2002}
        assert wait_for(lambda: promised in pinned()), pinned()


def test_every_rule_example_is_accepted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    examples = [body for page in pages() for body in blocks(page, "yaml") if "rules" in (yaml.safe_load(body) or {})]
    assert len(examples) >= 10
    refs = sorted({ref for body in examples for ref in SECRET_REF.findall(body)})
    with cli_stack():
        for ref in refs:  # a target's secrets must exist when its rule is written: put them as the docs say
            assert run_cli(["secret", "put", ref, "--generate"]).code == 0, ref
        for index, body in enumerate(examples):
            config = tmp_path / f"rule-{index}.yaml"
            config.write_text(body)
            ran = run_cli(["apply", "-f", str(config)])
            assert ran.code == 0 and "create" in ran.out, f"example {index}: {ran.err}\n{body}"


def test_deploy_page_matches_the_makefile_and_template() -> None:
    text = (DOCS / "deploy.md").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.M))
    for target in re.findall(r"`make ([a-z-]+)`|^make ([a-z-]+)$", text, re.M):
        assert (target[0] or target[1]) in targets
    template = (ROOT / "template.yaml").read_text(encoding="utf-8")
    parameters = yaml.load(template.split("\nGlobals:", 1)[0], Loader=yaml.BaseLoader)["Parameters"]
    documented = set(re.findall(r"^\| `([A-Za-z]+)` \| `", text, re.M))
    assert documented == set(parameters), "docs/deploy.md's parameter table differs from template.yaml"
    for name, spec in parameters.items():
        assert f"| `{name}` | `{spec['Default']}` |" in text, name
