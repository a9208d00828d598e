"""The CLI never shows a traceback: generated command lines, files and stdin (deep, huge, not UTF-8, not
JSON, YAML that JSON cannot carry, a directory for a file) end in one ``lakehook: error:`` line and an exit
code, as do Ctrl-C and a closed pipe. The API is a closed port, so nothing leaves the machine."""

from __future__ import annotations

import io
import json
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.cli import main
from lakehook.cli_commands.api import ApiClient, CliError
from lakehook.cli_commands.inputs import MAX_INPUT_BYTES, MAX_YAML_DEPTH, yaml_document
from lakehook.cli_commands.output import captured
from tests.hypothesis_profiles import examples


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


URL = f"http://127.0.0.1:{closed_port()}"


@dataclass
class Ran:
    code: int
    out: str
    err: str


def run(argv: list[str], stdin: bytes = b"", stdout: io.StringIO | None = None) -> Ran:
    """``lakehook --url <closed port> ARGV`` in-process; anything but SystemExit raising out fails the test."""
    out, err = stdout or io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        patch.setattr("sys.stderr", err)  # argparse writes its usage errors there
        patch.setattr("sys.stdout", out)  # a stream without a file descriptor, as when embedded
        patch.setenv("LAKEHOOK_ADMIN_TOKEN", "t")  # no SigV4, no AWS: `secret put` asks the (closed) local stack
        with captured(out, err):
            try:
                code = main(["--url", URL, *argv])
            except SystemExit as usage:  # argparse: --help (0) or a usage error (2)
                code = int(usage.code or 0)
    return Ran(code, out.getvalue(), err.getvalue())


def clean(ran: Ran) -> None:
    """A clear failure: no traceback, no fallback for defects, a message when it failed."""
    text = ran.out + ran.err
    assert "Traceback" not in text and "a lakehook defect" not in text, text
    if ran.code in (1, 2):
        assert "error" in ran.err, ran
    else:
        assert ran.code in (0, 130, 141), ran


# --- generated inputs -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


def nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf] if depth % 2 else {"rules": leaf}
    return leaf


def alias_bomb(levels: int, width: int) -> str:
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join([*lines, f"rules: [{{ruleId: r, x: *a{levels - 1}}}]"])


documents = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    json_values.map(lambda v: yaml.safe_dump({"rules": [v]}).encode()),
    st.integers(0, 5000).map(lambda n: ("[" * n + "]" * n).encode()),  # deep flow nesting
    st.integers(0, 3000).map(lambda n: ("rules:\n" + "".join("  " * (i + 1) + "-\n" for i in range(n))).encode()),
    st.builds(nested, st.integers(0, 200), json_values).map(lambda v: json.dumps(v).encode()),
    st.builds(alias_bomb, st.integers(1, 9), st.integers(1, 10)).map(str.encode),
    st.sampled_from(
        [
            b"rules:\n  - ruleId: r\n    since: 2025-06-01\n",  # a date, not a string
            b"rules: &r\n  - ruleId: r\n    x: *r\n",  # a recursive alias
            b"rules: !!set {a, b}\n",
            b"rules: [{ruleId: r, x: !!binary aGk=}]\n",
            b"rules: [{ruleId: r, x: .nan}]\n",
            b"{1: 2}\n",
            b"rules:\n  - ruleId: r\n    x: " + b"9" * 5000 + b"\n",  # more digits than int() takes
            b'{"a": 1, "a": 2}',
            b"\xff\xfe\x00\x01",
            b"rules: [\n",
            b"",
        ]
    ),
    st.binary(max_size=64),
    st.text(max_size=64).map(str.encode),
)


@st.composite
def command_lines(draw: st.DrawFn, path: str) -> tuple[list[str], bytes]:
    """A command reading a generated input from ``path`` (a file, a directory or nothing), ``-`` or an
    argument; or a generated jumble of the CLI's words."""
    content = draw(documents)
    source = draw(st.sampled_from(["file", "stdin", "directory", "missing"]))
    where = {"file": path, "stdin": "-", "directory": str(Path(path).parent), "missing": f"{path}.absent"}[source]
    text = content.decode("utf-8", errors="surrogateescape")  # what a shell passes for such bytes
    kind = draw(st.sampled_from(["apply", "push", "push-arg", "watermark", "outlet", "secret", "words"]))
    if kind == "apply":
        argv = ["apply", "-f", where, *draw(st.sampled_from([[], ["--dry-run"], ["--prune", "--yes"]]))]
    elif kind in ("push", "push-arg"):
        given = text if kind == "push-arg" else (where if where == "-" else f"@{where}")
        argv = ["push", "--json", given, "--producer", "p", "--secret", "s", "--attempts", "1"]
    elif kind == "watermark":
        argv = ["watermarks", "put", "--namespace", "n", "--asset", "a", "--key", "k", "--value", text]
    elif kind == "outlet":
        argv = ["complete", "k", "--status", "SUCCEEDED", "--outlet", "{" + text]
    elif kind == "secret":
        argv = ["secret", "put", draw(st.text(min_size=1, max_size=20)), "--value-file", where]
    else:
        words = st.sampled_from(
            ["apply", "-f", "push", "--json", "rules", "get", "list", "delete", "assets", "events", "producers",
             "aliases", "watermarks", "put", "secret", "explain", "triggers", "trigger", "evaluate", "complete",
             "--status", "retry", "replay", "state", "coverage", "--start", "--end", "--limit", "--output", "json",
             "--help", "--value", "--outlet", "--dry-run", "--force", "-", where]
        )  # fmt: skip
        argv = draw(st.lists(words | st.text(max_size=12), max_size=8))
        if argv[:1] == ["push"]:
            argv += ["--attempts", "1"]
    if draw(st.booleans()):
        argv = ["--output", "json", *argv]
    return argv, content


@pytest.fixture
def input_path() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        yield str(Path(folder) / "input.yaml")


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_command_line_or_input_ends_in_a_traceback(input_path: str, data: st.DataObject) -> None:
    argv, content = data.draw(command_lines(input_path))
    Path(input_path).write_bytes(content)
    ran = run(argv, stdin=content)
    clean(ran)
    if "--output" in argv[:2] and ran.code not in (0, 130, 141) and ran.out.strip():
        assert json.loads(ran.out)["error"]["message"]  # scripts still read one JSON document


# --- each way it used to end in a traceback ----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[" * 100_000, f"nests deeper than {MAX_YAML_DEPTH} levels"),  # was a RecursionError in PyYAML
        ("rules:\n" + "".join("  " * (i + 1) + "-\n" for i in range(2000)), "nests deeper than"),
        (b"\xff\xfe rules: []", "is not UTF-8 text (byte 0 is invalid)"),
        (b"rules:\n  - ruleId: r\n    since: 2025-06-01\n", "rules.0.since is a YAML date"),  # json.dumps: TypeError
        (alias_bomb(9, 10), "its YAML aliases expand it by 2345678910 values"),  # 10^9 values once sent
        (alias_bomb(5, 10), "its YAML aliases expand it by 234510 values"),  # 303 bytes, under MAX_YAML_VALUES
        (b"rules: &r\n  - ruleId: r\n    x: *r\n", "a YAML alias refers to a value that contains it"),
    ],
)
def test_a_config_file_the_cli_cannot_send_is_refused_in_one_line(
    input_path: str, content: bytes | str, message: str
) -> None:
    Path(input_path).write_bytes(content.encode() if isinstance(content, str) else content)
    ran = run(["apply", "-f", input_path])
    clean(ran)
    assert ran.code == 1 and message in ran.err, ran


def test_a_huge_file_a_directory_or_a_device_is_named_not_read_whole(input_path: str) -> None:
    with open(input_path, "wb") as sparse:
        sparse.truncate(MAX_INPUT_BYTES + 1)
    for argv, message in [
        (["apply", "-f", input_path], f"larger than {MAX_INPUT_BYTES} bytes"),
        (["apply", "-f", "/dev/zero"], f"larger than {MAX_INPUT_BYTES} bytes"),
        (["apply", "-f", str(Path(input_path).parent)], "it is a directory; name a file"),
        (["push", "--json", f"@{Path(input_path).parent}", "--producer", "p", "--secret", "s"], "is a directory"),
        (["secret", "put", "x", "--value-file", input_path], "larger than 65536 bytes"),
    ]:
        ran = run(argv)
        clean(ran)
        assert ran.code == 1 and message in ran.err, (argv, ran)


@pytest.mark.parametrize(
    "argv",
    [
        ["push", "--json", "[" * 100_000, "--producer", "p", "--secret", "s"],
        ["watermarks", "put", "--namespace", "n", "--asset", "a", "--key", "k", "--value", "[" * 100_000],
        ["complete", "k", "--status", "SUCCEEDED", "--outlet", '{"a":' * 100_000 + "1" + "}" * 100_000],
    ],
)
def test_deep_json_in_an_argument_is_refused_in_one_line(argv: list[str]) -> None:
    ran = run(argv)
    clean(ran)
    assert ran.code in (1, 2) and "deeper than 32 levels" in ran.err, ran


def test_an_argument_that_is_not_utf8_is_named() -> None:
    ran = run(["rules", "get", b"\xffdwd".decode("utf-8", errors="surrogateescape")])
    clean(ran)
    assert ran.code == 2 and "not UTF-8 text" in ran.err, ran


def test_ctrl_c_exits_130_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(ApiClient, "request", interrupted)
    ran = run(["rules", "list"])
    clean(ran)
    assert ran.code == 130 and "interrupted" in ran.err, ran


class ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_on_stdout_ends_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ApiClient, "request", lambda *a, **k: (200, {"items": [{"ruleId": "r"}], "nextToken": None}))
    ran = run(["rules", "list"], stdout=ClosedPipe())
    assert ran.code == 141 and "Traceback" not in ran.err, ran


def test_an_alias_bomb_is_refused_from_the_file_as_written_whatever_it_expands_to(input_path: str) -> None:
    """Two kilobytes that stand for 10^30 values: refused by sizing each anchor once, not by walking the
    expansion (which would never end); an anchor reused as configs reuse them is fine."""
    bomb = alias_bomb(30, 10)
    assert len(bomb) < 2048
    with pytest.raises(CliError, match=r"its YAML aliases expand it by \d{31} values, more than 100000 \(an alias"):
        yaml_document(bomb, "the config")
    reused = (
        "c: &c {snapshotRequired: true, qualityStatus: PASSED}\nrules: ["
        + ", ".join(
            f"{{ruleId: r{i}, groups: [{{groupId: g, members: [{{assetKey: a, condition: *c}}]}}]}}" for i in range(500)
        )
        + "]"
    )
    assert len(yaml_document(reused, "the config")["rules"]) == 500
