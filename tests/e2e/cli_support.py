"""Running the ``lakehook`` CLI in-process against a local stack, capturing what a user would see."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lakehook.cli import main
from lakehook.cli_commands.output import captured
from lakehook.local.runtime import LocalStack
from tests.waiting import wait_for as wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "lakehook.yaml"
ADMIN = "cli-admin-token"


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(argv: Sequence[str], out: io.StringIO | None = None) -> Ran:
    """Run the CLI as a user would; ``out`` lets a test read what it prints while it runs."""
    out, err = out or io.StringIO(), io.StringIO()
    with captured(out, err):
        try:
            code = main(list(argv))
        except SystemExit as usage:  # argparse refusing the command line, as a shell would see it
            code = int(usage.code or 0)
    return Ran(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def cli_stack() -> Iterator[LocalStack]:
    """A local stack and the CLI's variables pointing at it. The variables are set in a context of their own, undone
    before the stack restores the environment it changed: set with the test's ``monkeypatch``, undone at its teardown,
    they put back the stack's own LAKEHOOK_ADMIN_TOKEN after the stack had removed it, and every later test in the
    process ran with it (tests/unit/test_roles.py's IAM callers answered 401)."""
    with LocalStack(port=0, admin_token=ADMIN) as stack, pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAKEHOOK_URL", stack.api_url)
        patch.setenv("LAKEHOOK_ADMIN_TOKEN", ADMIN)
        yield stack
