"""The console server without a browser: what it forwards to the API and how, what it refuses, the files it
serves (all local: the console works offline), and that no Lambda layer carries it."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from lakehook.cli import build_parser
from lakehook.cli_commands.api import ApiClient
from lakehook.console.server import STATIC, ConsoleServer

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "console-test-token"


class RecordingApi:
    """A stand-in for the lakehook API on loopback: records each request, answers what it is told."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.answer: tuple[int, Any] = (200, {"items": []})
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                api.seen.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers.items()),
                        "body": self.rfile.read(length) if length else b"",
                    }
                )
                status, body = api.answer
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def upstream() -> Iterator[RecordingApi]:
    api = RecordingApi()
    yield api
    api.close()


@pytest.fixture
def console(upstream: RecordingApi) -> Iterator[str]:
    with ConsoleServer(lambda: ApiClient(url=upstream.url, admin_token=TOKEN)) as server:
        yield server.url.rstrip("/")


CHANGE = {"X-Lakehook-Console": "1", "Content-Type": "application/json"}


def test_a_read_is_forwarded_with_the_admin_token_and_its_query(console: str, upstream: RecordingApi) -> None:
    upstream.answer = (200, {"items": [{"ruleId": "r"}], "nextToken": None})
    answer = requests.get(f"{console}/api/triggers?ruleId=a%20b&limit=5", timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"items": [{"ruleId": "r"}], "nextToken": None}
    [seen] = upstream.seen
    assert (seen["method"], seen["path"]) == ("GET", "/triggers?ruleId=a%20b&limit=5")
    assert seen["headers"]["Authorization"] == f"Bearer {TOKEN}"


def test_an_action_is_forwarded_with_its_body_and_the_apis_answer_comes_back_as_it_was(
    console: str, upstream: RecordingApi
) -> None:
    upstream.answer = (409, {"error": "CONFLICT", "message": "the trigger is SUCCEEDED"})
    answer = requests.post(f"{console}/api/triggers/k/retry", data=b'{"x": 1}', headers=CHANGE, timeout=10)
    assert answer.status_code == 409
    assert answer.json()["message"] == "the trigger is SUCCEEDED"
    [seen] = upstream.seen
    assert (seen["method"], seen["path"], seen["body"]) == ("POST", "/triggers/k/retry", b'{"x": 1}')


def test_an_answer_without_a_body_stays_without_one(console: str, upstream: RecordingApi) -> None:
    upstream.answer = (204, None)
    answer = requests.get(f"{console}/api/anything", timeout=10)
    assert (answer.status_code, answer.content) == (204, b"")


@pytest.mark.parametrize(
    ("method", "headers", "status"),
    [
        ("POST", {"Content-Type": "application/json"}, 403),  # a cross-site form cannot add the header
        ("POST", {**CHANGE, "Origin": "https://evil.example"}, 403),
        ("PUT", CHANGE, 405),  # the console reads, retries, replays and evaluates; it writes no rules
        ("DELETE", CHANGE, 405),
        ("GET", {"Host": "evil.example:8321"}, 403),  # a DNS-rebinding page's host
    ],
)
def test_what_the_console_refuses_never_reaches_the_api(
    console: str, upstream: RecordingApi, method: str, headers: dict[str, str], status: int
) -> None:
    answer = requests.request(method, f"{console}/api/rules/r", data=b"{}", headers=headers, timeout=10)
    assert answer.status_code == status
    assert answer.json()["message"]
    assert upstream.seen == []


def test_a_body_over_the_limit_is_refused(console: str, upstream: RecordingApi) -> None:
    answer = requests.post(f"{console}/api/rules/r/evaluate", data=b"x" * (2 << 20), headers=CHANGE, timeout=10)
    assert answer.status_code == 413
    assert upstream.seen == []


def test_an_api_that_does_not_answer_is_a_502_saying_so() -> None:
    with ConsoleServer(lambda: ApiClient(url="http://127.0.0.1:9", admin_token=TOKEN)) as server:
        answer = requests.get(f"{server.url}api/rules", timeout=30)
    assert answer.status_code == 502
    assert "cannot reach the lakehook API" in answer.json()["message"]


def test_the_page_and_its_files_are_served_and_nothing_else(console: str) -> None:
    page = requests.get(f"{console}/", timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    script = requests.get(f"{console}/app.js", timeout=10)
    assert script.headers["Content-Type"].startswith("text/javascript")
    assert requests.get(f"{console}/vendor/dagre.esm.js", timeout=10).status_code == 200
    for sneaky in ("/../server.py", "/%2e%2e/server.py", "/pages/../../server.py", "/nope.js"):
        assert requests.get(f"{console}{sneaky}", timeout=10).status_code == 404, sneaky
    config = requests.get(f"{console}/console.json", timeout=10).json()
    assert config["auth"] == "admin token" and TOKEN not in json.dumps(config)


def test_every_file_the_page_loads_is_local_so_the_console_works_offline() -> None:
    texts = {p: p.read_text() for p in STATIC.rglob("*") if p.suffix in (".html", ".js", ".css")}
    for path, text in texts.items():
        if path.parent.name == "vendor":
            continue
        assert not re.search(r"""(src|href)=["']https?://|import[^;]*["']https?://|url\(["']?https?://""", text), path
    imports = {m for text in texts.values() for m in re.findall(r"""from\s+["'](\.{1,2}/[^"']+)["']""", text)}
    for path, text in texts.items():
        for target in re.findall(r"""from\s+["'](\.{1,2}/[^"']+)["']""", text):
            assert (path.parent / target).resolve().is_file(), f"{path.name} imports a missing {target}"
    assert imports


def test_the_vendored_files_are_the_pinned_ones_with_their_licences() -> None:
    vendor = STATIC / "vendor"
    rows = [line.split() for line in (vendor / "VENDORED.txt").read_text().splitlines() if not line.startswith("#")]
    assert {row[0] for row in rows} == {p.name for p in vendor.iterdir()} - {"VENDORED.txt"}
    for name, package, digest in rows:
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == digest, f"{name} is not {package}"
    assert (
        "MIT" in (vendor / "LICENSE.dagre.txt").read_text()
        or "Permission is hereby granted" in (vendor / "LICENSE.dagre.txt").read_text()
    )
    pinned = (ROOT / "scripts" / "vendor-console.sh").read_text()
    assert all(package.rsplit("@", 1)[1] in pinned for _, package, _ in rows)


def test_the_shared_layer_leaves_the_console_out(tmp_path: Path) -> None:
    subprocess.run(
        ["make", "-s", "-f", str(ROOT / "src/shared/Makefile"), "build-SharedLayer", f"ARTIFACTS_DIR={tmp_path}"],
        check=True,
        cwd=tmp_path,
    )
    package = tmp_path / "python" / "lakehook"
    assert (package / "api").is_dir() and (package / "domain").is_dir()
    assert not (package / "console").exists()
    assert not list(package.rglob("__pycache__"))
    template = (ROOT / "template.yaml").read_text()
    shared = template[template.index("  SharedLayer:") :].split("\n\n", 1)[0]
    assert "BuildMethod: makefile" in shared and "ContentUri: src/shared/" in shared


def test_nothing_a_function_imports_needs_the_console() -> None:
    users = {
        p.relative_to(ROOT / "src/shared").as_posix()
        for p in (ROOT / "src/shared/lakehook").rglob("*.py")
        if "lakehook.console" in p.read_text() and "/console/" not in p.as_posix()
    }
    assert users <= {"lakehook/cli.py", "lakehook/demo/__main__.py"}, users


def test_the_cli_has_a_console_command_that_takes_the_global_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKEHOOK_ADMIN_TOKEN", raising=False)  # the token's default comes from the environment
    args = build_parser().parse_args(["console", "--port", "0", "--url", "https://x.example", "--region", "eu-west-1"])
    assert (args.port, args.url, args.region, args.api_token) == (0, "https://x.example", "eu-west-1", None)
