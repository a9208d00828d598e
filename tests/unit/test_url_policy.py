"""The outbound URL policy of HTTP targets: as written (when a rule is written) and after DNS (when a run
starts). Every resolution here is a stub; no test sends a byte to any of these addresses (the one that connects,
to a local receiver, is tests/integration/test_url_policy_connection.py)."""

from __future__ import annotations

import ipaddress
import socket

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.targets import TargetDeps, build_target_clients
from lakehook.adapters.targets.egress import AddressGuard, DestinationRefusedError, guard_session
from lakehook.domain.dispatch import Invocation, OutcomeKind, RunManifest
from lakehook.domain.targets import validate_target
from lakehook.domain.triggers import PinnedInput, Trigger, trigger_key
from lakehook.domain.url_policy import METADATA_ADDRESSES, UrlPolicy, UrlRefusedError
from tests.fakes.memory import InMemorySecretStore
from tests.hypothesis_profiles import examples

DEPLOYED = UrlPolicy()
LOCAL = UrlPolicy(local_mode=True)
ALLOW_10_20 = UrlPolicy.of(False, ["10.20.0.0/16", "fd12:3456::/32"])

# (URL, refused on a deployed stack?, refused locally?)
CASES = [
    ("https://scheduler.example.com/hooks/dwd", False, False),
    ("https://scheduler.example.com:8443/hooks", False, False),
    ("https://8.8.8.8/hook", False, False),
    ("https://[2001:4860:4860::8888]/hook", False, False),
    ("https://[::ffff:8.8.8.8]/hook", False, False),
    # schemes
    ("http://scheduler.example.com/hook", True, True),
    ("file:///etc/passwd", True, True),
    ("gopher://scheduler.example.com:70/_GET", True, True),
    ("ftp://scheduler.example.com/", True, True),
    ("//scheduler.example.com/hook", True, True),
    ("scheduler.example.com/hook", True, True),
    # loopback: local mode only, plain http included
    ("http://127.0.0.1:8080/hook", True, False),
    ("http://localhost:8080/hook", True, False),
    ("http://localhost.:8080/hook", True, False),
    ("http://[::1]:8080/hook", True, False),
    ("https://127.9.9.9/hook", True, False),
    ("http://hooks.localhost/hook", True, False),
    # metadata services and link-local, in every spelling
    ("https://169.254.169.254/latest/meta-data/", True, True),
    ("https://169.254.170.2/v2/credentials", True, True),
    ("https://169.254.1.1/", True, True),
    ("https://[fd00:ec2::254]/latest/meta-data/", True, True),
    ("https://[fe80::1]/", True, True),
    ("https://[fe80::1%25eth0]/", True, True),
    ("https://[::ffff:169.254.169.254]/", True, True),
    ("https://[::ffff:a9fe:a9fe]/", True, True),
    ("https://[64:ff9b::169.254.169.254]/", True, True),
    ("https://[2002:a9fe:a9fe::1]/", True, True),
    ("https://metadata.google.internal/computeMetadata/v1/", True, True),
    ("https://metadata.google.internal./computeMetadata/v1/", True, True),
    ("https://METADATA.Google.Internal/", True, True),
    ("https://metadata/computeMetadata/v1/", True, True),
    ("https://100.100.100.200/latest/meta-data/", True, True),
    ("https://168.63.129.16/", True, True),
    # numeric spellings a resolver reads as an address
    ("http://2130706433/", True, True),
    ("https://2852039166/", True, True),
    ("https://0xa9fea9fe/", True, True),
    ("https://0251.0376.0251.0376/", True, True),
    ("https://0177.0.0.1/", True, True),
    ("https://127.1/", True, True),
    ("https://169.254.169.254./", True, True),
    ("https://1.2.3.4.5/", True, True),
    # credentials and other tricks
    ("https://good@169.254.169.254/", True, True),
    ("https://scheduler.example.com@169.254.169.254/", True, True),
    ("https://user:pw@scheduler.example.com/", True, True),
    ("https://169.254.169.254\\@scheduler.example.com/", True, True),
    ("https://scheduler.example.com/hook#frag", True, True),
    ("https://scheduler.example.com/ho ok", True, True),
    ("https://scheduler.example.com:99999/", True, True),
    ("https://sch\u00e9duler.example.com/", True, True),
    # private, shared and reserved ranges
    ("https://10.0.0.1/", True, True),
    ("https://172.16.5.4/", True, True),
    ("https://192.168.1.1/", True, True),
    ("https://100.64.0.1/", True, True),
    ("https://0.0.0.0/", True, True),
    ("https://0.1.2.3/", True, True),
    ("https://224.0.0.251/", True, True),
    ("https://239.255.255.250/", True, True),
    ("https://240.0.0.1/", True, True),
    ("https://255.255.255.255/", True, True),
    ("https://192.0.2.10/", True, True),
    ("https://198.18.0.1/", True, True),
    ("https://[fc00::1]/", True, True),
    ("https://[fd12:3456::1]/", True, True),
    ("https://[ff02::1]/", True, True),
    ("https://[::]/", True, True),
    ("https://[::ffff:10.0.0.1]/", True, True),
]


@pytest.mark.parametrize(("url", "deployed", "local"), CASES)
def test_the_policy_table(url: str, deployed: bool, local: bool) -> None:
    for policy, refused in ((DEPLOYED, deployed), (LOCAL, local)):
        if refused:
            with pytest.raises(UrlRefusedError):
                policy.check_url(url)
        else:
            assert policy.check_url(url) == url


def test_the_reasons_name_what_is_wrong() -> None:
    def reason(url: str, policy: UrlPolicy = DEPLOYED) -> str:
        with pytest.raises(UrlRefusedError) as caught:
            policy.check_url(url)
        return str(caught.value)

    assert "credentials" in reason("https://good@169.254.169.254/")
    assert "metadata" in reason("https://169.254.169.254/")
    assert "four decimal parts" in reason("http://2130706433/", LOCAL)
    assert "only to a loopback host in local mode" in reason("http://127.0.0.1/")
    assert "TargetAllowedNetworks" in reason("https://10.1.2.3/")
    assert "https" in reason("gopher://x.example.com/")


def test_allow_listed_networks_open_private_ranges_but_never_metadata_or_link_local() -> None:
    assert ALLOW_10_20.check_url("https://10.20.3.4/hook")
    assert ALLOW_10_20.check_url("https://[fd12:3456::7]/hook")
    assert ALLOW_10_20.check_url("https://[::ffff:10.20.3.4]/hook")
    for url in ("https://10.21.0.1/", "https://192.168.0.1/", "https://[fd00:ec2::254]/"):
        with pytest.raises(UrlRefusedError):
            ALLOW_10_20.check_url(url)
    everything = UrlPolicy.of(False, ["0.0.0.0/0", "::/0"])
    for url in ("https://169.254.169.254/", "https://[fe80::1]/", "https://127.0.0.1/", "https://168.63.129.16/"):
        with pytest.raises(UrlRefusedError):
            everything.check_url(url)
    with pytest.raises(ValueError, match="CIDR"):
        UrlPolicy.of(False, ["10.0.0.0/33"])


# --- at dispatch time: after DNS ---------------------------------------------------------------------------


class StubResolver:
    """Answers fixed addresses per name and counts lookups; never asks a real resolver."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host]


@pytest.mark.parametrize(
    ("answer", "refused"),
    [
        (["93.184.216.34"], False),
        (["2606:2800:220:1:248:1893:25c8:1946"], False),
        (["169.254.169.254"], True),
        (["fd00:ec2::254"], True),
        (["93.184.216.34", "10.0.0.5"], True),  # one refused address refuses the name
        (["::ffff:169.254.169.254"], True),
        (["127.0.0.1"], True),
        (["100.100.100.200"], True),
        (["fe80::1%eth0"], True),
    ],
)
def test_a_name_is_judged_by_every_address_it_resolves_to(answer: list[str], refused: bool) -> None:
    guard = AddressGuard(DEPLOYED, StubResolver({"hooks.example.com": answer}))
    if refused:
        with pytest.raises(DestinationRefusedError, match="resolves to"):
            guard.address_for("hooks.example.com", 443)
    else:
        assert guard.address_for("hooks.example.com", 443) == answer[0]


def test_the_guard_refuses_metadata_names_without_asking_dns() -> None:
    resolver = StubResolver({})
    guard = AddressGuard(LOCAL, resolver)
    with pytest.raises(DestinationRefusedError, match="metadata"):
        guard.address_for("metadata.google.internal", 80)
    assert resolver.lookups == []


def test_an_allow_listed_private_address_passes_the_guard() -> None:
    guard = AddressGuard(ALLOW_10_20, StubResolver({"airflow.corp.example": ["10.20.0.9"]}))
    assert guard.address_for("airflow.corp.example", 443) == "10.20.0.9"


SECRET = "hook-secret"
T0 = 1_750_000_000_000


def invocation() -> tuple[Trigger, Invocation]:
    pins = (PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=1),)
    trigger = Trigger(
        trigger_key=trigger_key("dwd", "g", pins, None, 0),
        rule_id="dwd",
        group_id="g",
        inputs=pins,
        created_at=T0,
        updated_at=T0,
    )
    return trigger, Invocation.of(trigger, RunManifest.for_trigger(trigger), "s3://m/x.json", 1)


@pytest.fixture
def secrets() -> InMemorySecretStore:
    store = InMemorySecretStore()
    store.put_secret("lakehook/targets/hook", SECRET)
    return store


def test_a_webhook_whose_name_resolves_to_metadata_fails_for_good_and_sends_nothing(
    secrets: InMemorySecretStore,
) -> None:
    # GIVEN a rule written with a harmless-looking name, which now resolves to the metadata address
    resolver = StubResolver({"hooks.example.com": ["169.254.169.254"]})
    deps = TargetDeps(secrets=secrets, aws=lambda service: None, url_policy=DEPLOYED, resolver=resolver)
    client = build_target_clients(deps)["webhook"]
    config = validate_target(
        {"type": "webhook", "url": "https://hooks.example.com/run", "secretRef": "lakehook/targets/hook"}, DEPLOYED
    )
    # WHEN the run starts THEN it is a FINAL failure naming the address, and nothing was sent
    outcome = client.start(invocation()[1], config)
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "refused_destination"
    assert "169.254.169.254" in (outcome.reason or "") and not outcome.ambiguous
    assert resolver.lookups == ["hooks.example.com"]


def test_airflow_and_dolphinscheduler_are_guarded_as_well(secrets: InMemorySecretStore) -> None:
    secrets.put_secret("lakehook/targets/airflow", '{"username": "u", "password": "p"}')
    secrets.put_secret("lakehook/targets/ds", "token")
    resolver = StubResolver({"airflow.example.com": ["10.0.0.8"], "ds.example.com": ["fd00:ec2::254"]})
    deps = TargetDeps(secrets=secrets, aws=lambda service: None, url_policy=DEPLOYED, resolver=resolver)
    clients = build_target_clients(deps)
    airflow = validate_target(
        {
            "type": "airflow",
            "baseUrl": "https://airflow.example.com",
            "dagId": "d",
            "credentialsRef": "lakehook/targets/airflow",
        }
    )
    ds = validate_target(
        {
            "type": "dolphinscheduler",
            "baseUrl": "https://ds.example.com/dolphinscheduler",
            "projectCode": 1,
            "processDefinitionCode": 2,
            "tokenRef": "lakehook/targets/ds",
        }
    )
    for client, config in ((clients["airflow"], airflow), (clients["dolphinscheduler"], ds)):
        outcome = client.start(invocation()[1], config)
        assert outcome.kind is OutcomeKind.FATAL and outcome.code == "refused_destination", outcome


def test_the_guarded_session_ignores_proxies_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://169.254.169.254:3128")
    session = guard_session(requests.Session(), DEPLOYED, StubResolver({}))
    assert session.trust_env is False


# --- every spelling of a refused address -----------------------------------------------------------

_V4_METADATA = sorted(str(a) for a in METADATA_ADDRESSES if a.version == 4)
_V6_METADATA = sorted(str(a) for a in METADATA_ADDRESSES if a.version == 6)
_EVERY_POLICY = (
    DEPLOYED,
    LOCAL,
    ALLOW_10_20,
    UrlPolicy.of(False, ["0.0.0.0/0", "::/0"]),
    UrlPolicy.of(True, ["0.0.0.0/0", "::/0"]),
)


@st.composite
def refused_ipv4(draw: st.DrawFn) -> ipaddress.IPv4Address:
    """A cloud metadata address or any IPv4 link-local one (169.254.0.0/16)."""
    if draw(st.booleans()):
        return ipaddress.IPv4Address(draw(st.sampled_from(_V4_METADATA)))
    return ipaddress.IPv4Address(0xA9FE0000 | draw(st.integers(0, 0xFFFF)))


def _groups(value: int) -> list[int]:
    return [(value >> (112 - 16 * i)) & 0xFFFF for i in range(8)]


@st.composite
def ipv6_spelling(draw: st.DrawFn, value: int) -> str:
    """One textual spelling of an IPv6 address: full or compressed, leading zeros, any case, the last 32
    bits as hex groups or dotted decimal."""
    groups = _groups(value)
    dotted = draw(st.booleans())
    tail = [str(ipaddress.IPv4Address(value & 0xFFFFFFFF))] if dotted else []
    head = groups[:6] if dotted else groups
    parts = [format(g, "x").zfill(draw(st.integers(len(format(g, "x")), 4))) for g in head]
    zero_runs = [i for i, g in enumerate(head) if g == 0]
    if zero_runs and draw(st.booleans()):  # compress one run of zero groups (any run, not only the longest)
        start = draw(st.sampled_from(zero_runs))
        end = start
        while end + 1 < len(head) and head[end + 1] == 0 and draw(st.booleans()):
            end += 1
        left, right = parts[:start], parts[end + 1 :]
        text = ":".join(left) + "::" + ":".join(right + tail)
        if not right and not tail:
            text = ":".join(left) + "::"
    else:
        text = ":".join(parts + tail)
    return "".join(c.upper() if draw(st.booleans()) else c for c in text)


@st.composite
def refused_ipv6(draw: st.DrawFn) -> tuple[int, str]:
    """A refused address as an IPv6 value and how it got there (the carrying form)."""
    v4 = int(draw(refused_ipv4()))
    low = draw(st.integers(0, 0xFFFF))
    forms = {
        "metadata": int(ipaddress.IPv6Address(draw(st.sampled_from(_V6_METADATA)))),
        "link-local": (0xFE80 << 112) | (draw(st.integers(0, 0x3F)) << 112) | draw(st.integers(0, 2**64 - 1)),
        "mapped": 0xFFFF << 32 | v4,
        "translated": 0xFFFF << 48 | v4,
        "compatible": v4,
        "6to4": (0x2002 << 112) | (v4 << 80) | draw(st.integers(0, 2**80 - 1)),
        "nat64": int(ipaddress.IPv6Address("64:ff9b::")) | v4,
        "nat64-local": int(ipaddress.IPv6Address("64:ff9b:1::")) | low << 32 | v4,
        "teredo": (0x20010000 << 96) | (draw(st.integers(0, 2**64 - 1)) << 32) | (v4 ^ 0xFFFFFFFF),
    }
    form = draw(st.sampled_from(sorted(forms)))
    return forms[form], form


@settings(max_examples=examples(400), deadline=None)
@given(st.data())
def test_every_spelling_of_a_metadata_or_link_local_address_is_refused_in_every_mode(data: st.DataObject) -> None:
    value, form = data.draw(refused_ipv6())
    spelled = data.draw(ipv6_spelling(value))
    assert ipaddress.IPv6Address(spelled) == ipaddress.IPv6Address(value), spelled  # the spelling is faithful
    zone = data.draw(st.sampled_from(["", "%25eth0", "%251", "%25en0"])) if form == "link-local" else ""
    port = data.draw(st.sampled_from(["", ":443", ":80", ":8080"]))
    scheme = data.draw(st.sampled_from(["https", "http", "HTTPS"]))
    url = f"{scheme}://[{spelled}{zone}]{port}/latest/meta-data/"
    for policy in _EVERY_POLICY:
        with pytest.raises(UrlRefusedError):
            policy.check_url(url)
        # and when a name resolves to it (the dispatch-time and poll-time check)
        guard = AddressGuard(policy, lambda host, port, spelled=spelled: [spelled])
        with pytest.raises(DestinationRefusedError):
            guard.address_for("innocent.example.com", 443)


@settings(max_examples=examples(200), deadline=None)
@given(refused_ipv4(), st.data())
def test_every_ipv4_metadata_or_link_local_address_is_refused_in_every_mode(
    address: ipaddress.IPv4Address, data: st.DataObject
) -> None:
    host = data.draw(st.sampled_from([str(address), f"[::ffff:{address}]", f"[::{address}]"]))
    for policy in _EVERY_POLICY:
        with pytest.raises(UrlRefusedError):
            policy.check_url(f"https://{host}/")


@pytest.mark.parametrize(
    "host",
    [
        "::169.254.169.254",  # IPv4-compatible
        "::a9fe:a9fe",
        "::ffff:0:169.254.169.254",  # IPv4-translated (SIIT)
        "64:ff9b:1::a9fe:a9fe",  # local-use NAT64, /96
        "64:ff9b:1:a9fe:a9:fe00::",  # local-use NAT64, /48
        "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo, client 169.254.169.254
        "fd00:0ec2:0000:0000:0000:0000:0000:0254",
        "FD00:EC2::254",
        "fec0::1",  # site-local
    ],
)
def test_the_spellings_python_takes_for_global_are_refused(host: str) -> None:
    for policy in (DEPLOYED, LOCAL):
        with pytest.raises(UrlRefusedError):
            policy.check_url(f"https://[{host}]/")


def test_addresses_that_carry_a_public_ipv4_address_stay_allowed() -> None:
    for host in ("::ffff:8.8.8.8", "2002:808:808::1", "64:ff9b::8.8.8.8", "2606:4700:4700::1111"):
        assert DEPLOYED.check_url(f"https://[{host}]/") == f"https://[{host}]/"
