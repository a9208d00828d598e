"""template.yaml as CloudFormation sees it after the SAM transform: the SAM CLI's translator, run in ``.venv-sam``
(``tests/sam_translate.py``), so the tests that read it need that venv (``make setup`` installs it). They live in
tests/integration: no unit test needs the SAM venv."""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from typing import Any

import pytest

from tests.support import ROOT

SAM_PYTHON = ROOT / ".venv-sam" / "bin" / "python"


@cache
def deployed(*parameters: str) -> dict[str, Any]:
    """The transformed template, with ``Name=Value`` parameters given (the others take their defaults)."""
    if not SAM_PYTHON.exists():
        pytest.fail(f"{SAM_PYTHON} is missing: `make setup` installs the SAM CLI the IAM checks translate with")
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}
    done = subprocess.run(
        [str(SAM_PYTHON), str(ROOT / "tests" / "sam_translate.py"), str(ROOT / "template.yaml"), *parameters],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"the SAM transform refused template.yaml:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)  # type: ignore[no-any-return]
