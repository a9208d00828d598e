"""The console server without a browser: what it forwards to the API and how (only the calls its pages make),
what it refuses (every other route, cross-site requests), the files it serves (all local: the console works
offline), and that no Lambda layer carries it."""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
import requests
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lakehook.cli import build_parser
from lakehook.cli_commands.api import ApiClient
from lakehook.cli_commands.api_docs import load_spec
from lakehook.console.allowlist import ROUTES, refusal
from lakehook.console.server import STATIC, ConsoleServer
from tests.hypothesis_profiles import examples

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
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def upstream() -> Iterator[RecordingApi]:
    api = RecordingApi()
    yield api
    api.close()


@pytest.fixture
def served(upstream: RecordingApi) -> Iterator[ConsoleServer]:
    with ConsoleServer(lambda: ApiClient(url=upstream.url, admin_token=TOKEN)) as server:
        yield server


@pytest.fixture
def console(served: ConsoleServer) -> str:
    return served.url.rstrip("/")


@pytest.fixture
def change(console: str) -> dict[str, str]:
    """The headers the console's page sends with a change: its session token, read from /console.json."""
    token = requests.get(f"{console}/console.json", timeout=10).json()["token"]
    return {"X-Lakehook-Console": token, "Content-Type": "application/json"}


def test_a_read_is_forwarded_with_the_admin_token_and_its_query(console: str, upstream: RecordingApi) -> None:
    upstream.answer = (200, {"items": [{"ruleId": "r"}], "nextToken": None})
    answer = requests.get(f"{console}/api/triggers?ruleId=a%20b&limit=5", timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"items": [{"ruleId": "r"}], "nextToken": None}
    [seen] = upstream.seen
    assert (seen["method"], seen["path"]) == ("GET", "/triggers?ruleId=a%20b&limit=5")
    assert seen["headers"]["Authorization"] == f"Bearer {TOKEN}"


def test_an_action_is_forwarded_with_its_body_and_the_apis_answer_comes_back_as_it_was(
    console: str, upstream: RecordingApi, change: dict[str, str]
) -> None:
    upstream.answer = (409, {"error": "CONFLICT", "message": "the trigger is SUCCEEDED"})
    answer = requests.post(f"{console}/api/triggers/k/retry", data=b'{"x": 1}', headers=change, timeout=10)
    assert answer.status_code == 409
    assert answer.json()["message"] == "the trigger is SUCCEEDED"
    [seen] = upstream.seen
    assert (seen["method"], seen["path"], seen["body"]) == ("POST", "/triggers/k/retry", b'{"x": 1}')


def test_an_answer_without_a_body_stays_without_one(console: str, upstream: RecordingApi) -> None:
    upstream.answer = (204, None)
    answer = requests.get(f"{console}/api/rules", timeout=10)
    assert (answer.status_code, answer.content) == (204, b"")


def test_a_body_over_the_limit_is_refused(console: str, upstream: RecordingApi, change: dict[str, str]) -> None:
    answer = requests.post(f"{console}/api/rules/r/evaluate", data=b"x" * (2 << 20), headers=change, timeout=10)
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
    assert len(config["token"]) >= 32  # the session token of this server's page (not a credential of the API)


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


# --- what the console forwards: the pages' calls, nothing else -------------------------------------------------

# The calls the pages make (static/api.js and static/pages/*.js), as the page's scripts spell them.
PAGE_CALLS = {
    ("GET", "/assets"),
    ("GET", "/assets/state"),
    ("GET", "/assets/events"),
    ("GET", "/assets/coverage"),
    ("GET", "/rules"),
    ("GET", "/rules/{ruleId}"),
    ("GET", "/rules/{ruleId}/explain"),
    ("GET", "/triggers"),
    ("GET", "/me"),  # the credentials' role: the page hides the actions it may not take
    ("POST", "/rules/{ruleId}/evaluate"),
    ("POST", "/rules/{ruleId}/backtest"),
    ("POST", "/triggers/{triggerKey}/retry"),
    ("POST", "/triggers/{triggerKey}/replay"),
}


def _calls_in_the_page_scripts() -> set[tuple[str, str]]:
    found = set()
    for script in [STATIC / "api.js", *sorted((STATIC / "pages").glob("*.js"))]:
        for line in script.read_text().splitlines():
            for literal in re.findall(r"""["'`](/[a-z][^"'`]*)["'`]""", line):
                if literal in ("/console.json", "/api"):  # the server's own config, and the proxy's prefix
                    continue
                method = "POST" if 'method: "POST"' in line else "GET"
                found.add((method, re.sub(r"\$\{[^}]*\}", "{}", literal)))
    return found


def test_the_allow_list_is_exactly_what_the_page_scripts_call() -> None:
    def shape(template: str) -> str:
        return re.sub(r"\{[^}]*\}", "{}", template)

    assert {(r.method, shape(r.template)) for r in ROUTES} == _calls_in_the_page_scripts()
    assert {(r.method, r.template) for r in ROUTES} == PAGE_CALLS


def _api_operations() -> list[tuple[str, str]]:
    spec = load_spec()
    return [(method.upper(), path) for path, ops in spec["paths"].items() for method in ops]


def _concrete(template: str) -> str:
    return re.sub(r"\{[^}]*\}", "p1", template)


@pytest.mark.parametrize(("method", "template"), _api_operations())
def test_every_api_operation_the_pages_do_not_call_is_refused_before_the_token_is_attached(
    console: str, upstream: RecordingApi, change: dict[str, str], method: str, template: str
) -> None:
    # GIVEN every operation of the API's own OpenAPI document, sent the way the page sends a change
    answer = requests.request(method, f"{console}/api{_concrete(template)}?x=1", data=b"{}", headers=change, timeout=10)
    if (method, template) in PAGE_CALLS:
        assert answer.status_code == 200
        [seen] = upstream.seen
        assert (seen["method"], seen["path"]) == (method, f"{_concrete(template)}?x=1")
        return
    # THEN the console refuses it with a JSON error naming what it forwards, and the API never sees it
    assert answer.status_code in (403, 405), (method, template)
    body = answer.json()
    assert body["error"] in ("FORBIDDEN", "METHOD_NOT_ALLOWED") and "the console" in body["message"]
    if answer.status_code == 405:
        assert answer.headers["Allow"] and method not in answer.headers["Allow"]
    assert upstream.seen == []


def test_a_push_to_asset_events_through_the_console_never_reaches_the_api(
    console: str, upstream: RecordingApi, change: dict[str, str]
) -> None:
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": "iceberg://glue/db/t", "snapshotId": 1, "commitTime": 1}
    answer = requests.post(f"{console}/api/asset-events", json=event, headers=change, timeout=10)
    assert answer.status_code == 403
    assert answer.json() == {
        "error": "FORBIDDEN",
        "message": "the console does not forward POST /asset-events: it forwards only the calls its pages make "
        "(reads, backtest, and evaluate, retry and replay); use the CLI or the API for anything else",
    }
    assert upstream.seen == []


def _raw(console: str, method: str, target: str, headers: dict[str, str]) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(urlsplit(console).netloc, timeout=10)
    try:
        conn.request(method, target, body=b"{}", headers=headers)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        conn.close()


_SEGMENTS = st.sampled_from(
    ["rules", "triggers", "assets", "asset-events", "producers", "p1", "r.1", ".", "..", "%2e%2e", "%2F", "", "x%00"]
)
_PARAMETERS = st.one_of(
    st.from_regex(r"[A-Za-z0-9_.-]{1,200}", fullmatch=True),
    st.sampled_from(["x" * 201, ".", "..", "%2e%2e", "a%2Fb", "", "a b", "é"]),
)


@st.composite
def _requests(draw: st.DrawFn) -> tuple[str, str]:
    """A page's call with odd parameters or another method, or a path of loose segments."""
    if draw(st.booleans()):
        route = draw(st.sampled_from(ROUTES))
        path = re.sub(r"\{[^}]*\}", lambda _: draw(_PARAMETERS), route.template)
        method = draw(st.sampled_from([route.method, route.method, "GET", "POST", "PUT", "DELETE"]))
        return method, path + draw(st.one_of(st.just(""), st.sampled_from(["/", "/../asset-events", "/x"])))
    segments = draw(st.lists(_SEGMENTS, min_size=1, max_size=5))
    return draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"])), "/" + "/".join(segments)


@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=_requests())
def test_whatever_path_is_asked_for_the_api_sees_only_an_allowed_call_exactly_as_checked(
    console: str, upstream: RecordingApi, change: dict[str, str], request: tuple[str, str]
) -> None:
    method, path = request[0], quote(request[1], safe="/%.-_~")  # http.client sends it as is: no dot resolved
    upstream.seen.clear()
    status, answer = _raw(console, method, f"/api{path}", change)
    allowed = refusal(method, path) is None
    if not allowed:
        assert status in (403, 405) and answer["message"]
        assert upstream.seen == []
        return
    # A dot segment would be resolved by the HTTP client into another route: an allowed path has none.
    assert not {".", ".."} & set(path.split("/"))
    assert any(m == method and re.fullmatch(re.sub(r"\{[^}]*\}", "[A-Za-z0-9_.-]+", t), path) for m, t in PAGE_CALLS), (
        path
    )
    event("forwarded")
    [seen] = upstream.seen
    assert (seen["method"], seen["path"]) == (method, path)


# --- cross-site requests ------------------------------------------------------------------------------------------


def test_a_change_needs_this_servers_session_token(console: str, upstream: RecordingApi, served: ConsoleServer) -> None:
    for token in (None, "", "1", served.session_token[:-1], served.session_token + "x"):
        headers = {"Content-Type": "application/json"} | ({} if token is None else {"X-Lakehook-Console": token})
        answer = requests.post(f"{console}/api/rules/r/evaluate", data=b"{}", headers=headers, timeout=10)
        assert answer.status_code == 403, token
        assert "session token" in answer.json()["message"]
    assert upstream.seen == []
    with ConsoleServer(lambda: ApiClient(url=upstream.url, admin_token=TOKEN)) as other:
        assert other.session_token != served.session_token  # each server its own


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "http://localhost:3000",  # another page on loopback (a dev server): same site, another origin
        "http://127.0.0.1:1",
        "https://127.0.0.1:{port}",
        "null",  # a sandboxed frame or a file:// page
    ],
)
def test_a_change_from_another_origin_is_refused(
    console: str, upstream: RecordingApi, change: dict[str, str], served: ConsoleServer, origin: str
) -> None:
    headers = {**change, "Origin": origin.format(port=served.port)}
    answer = requests.post(f"{console}/api/rules/r/evaluate", data=b"{}", headers=headers, timeout=10)
    assert answer.status_code == 403
    assert "another origin" in answer.json()["message"]
    assert upstream.seen == []


def test_a_change_from_the_consoles_own_origin_is_forwarded_whatever_loopback_name_it_was_opened_as(
    upstream: RecordingApi, served: ConsoleServer, change: dict[str, str]
) -> None:
    for host in (f"127.0.0.1:{served.port}", f"localhost:{served.port}"):
        headers = {**change, "Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin"}
        answer = requests.post(f"{served.url}api/rules/r/evaluate", data=b"{}", headers=headers, timeout=10)
        assert answer.status_code == 200, answer.text
    assert [s["path"] for s in upstream.seen] == ["/rules/r/evaluate"] * 2


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_request_another_site_started_is_refused(
    console: str, upstream: RecordingApi, change: dict[str, str], site: str, method: str
) -> None:
    path = "/api/rules" if method == "GET" else "/api/rules/r/evaluate"
    answer = requests.request(
        method, f"{console}{path}", data=b"{}", headers={**change, "Sec-Fetch-Site": site}, timeout=10
    )
    assert answer.status_code == 403
    assert site in answer.json()["message"]
    assert upstream.seen == []


def test_a_cors_preflight_is_never_approved(console: str, upstream: RecordingApi) -> None:
    headers = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    answer = requests.options(f"{console}/api/rules/r/evaluate", headers=headers, timeout=10)
    assert answer.status_code == 405
    assert "Access-Control-Allow-Origin" not in answer.headers
    assert upstream.seen == []


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "99999999999999999999"])
def test_a_content_length_that_is_not_a_size_is_a_400(
    console: str, upstream: RecordingApi, change: dict[str, str], length: str
) -> None:
    with socket.create_connection(("127.0.0.1", int(console.rsplit(":", 1)[1])), timeout=10) as conn:
        request = (
            f"POST /api/rules/r/evaluate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n"
            f"X-Lakehook-Console: {change['X-Lakehook-Console']}\r\nConnection: close\r\n\r\n"
        )
        conn.sendall(request.encode())
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.0 400") or reply.startswith(b"HTTP/1.1 400"), reply[:200]
    assert upstream.seen == []
