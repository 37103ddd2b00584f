"""Where model requests may go: every spelling of a loopback, private, link-local, CGNAT,
multicast, reserved, unspecified, IPv4-embedding IPv6 or metadata address is refused when an
owner saves an endpoint (400 naming base_url) and again when a request is made (a real HTTP
client against a real listener that records every connection: nothing arrives). Names that
resolve to such addresses are refused after resolution, every resolved address is checked, the
request connects to the checked address, and a redirect is never followed."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from django.urls import reverse

from auditor.models import ModelEndpoint
from policies.llm import ModelClient, ModelConfig
from policies.llm.netguard import AddressGuard, UrlRefused
from tests.fakes.openai_server import FakeOpenAI, Reply

HI = [{"role": "user", "content": "hi"}]


class Listener:
    """A TCP listener on an address that records every connection it accepts."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(1)
            data = b""
            try:
                data = conn.recv(65536)
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 2\r\n\r\nno")
            except OSError:
                pass
            self.received.append(data)
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(timeout=2)


@pytest.fixture()
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.stop()


def forms(port: int) -> list[str]:
    """Every spelling of a non-public address the issue names, on the listener's port."""
    return [
        f"http://127.0.0.1:{port}/v1",
        f"http://127.1:{port}/v1",
        f"http://0x7f000001:{port}/v1",
        f"http://2130706433:{port}/v1",
        f"http://0177.0.0.1:{port}/v1",
        f"http://[::1]:{port}/v1",
        f"http://[::ffff:127.0.0.1]:{port}/v1",
        f"http://[::127.0.0.1]:{port}/v1",
        f"http://0.0.0.0:{port}/v1",
        f"http://localhost:{port}/v1",
        f"http://LocalHost.:{port}/v1",
        f"http://api.localhost:{port}/v1",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://[fd00::1]/v1",
        "http://[fe80::1]/v1",
        "http://10.0.0.1/v1",
        "http://172.16.5.4/v1",
        "http://192.168.1.1/v1",
        "http://100.64.0.1/v1",
        "http://224.0.0.1/v1",
        "http://240.0.0.1/v1",
        "http://[2002:7f00:1::]/v1",  # 6to4 of 127.0.0.1
        "http://[64:ff9b::a00:1]/v1",  # NAT64 of 10.0.0.1
    ]


BAD_SHAPES = [
    ("ftp://models.example.com/v1", "only http and https"),
    ("file:///etc/passwd", "only http and https"),
    ("gopher://127.0.0.1:6379/_INFO", "only http and https"),
    ("https://user:pw@models.example.com/v1", "credentials in the URL"),
    ("https:///v1", "no host"),
    ("https://models.example.com:99999/v1", "not a valid URL"),
]


@pytest.mark.parametrize("index", range(len(forms(1))))
def test_every_form_is_refused_at_request_time_and_nothing_arrives(
    listener: Listener, index: int
) -> None:
    url = forms(listener.port)[index]
    client = ModelClient(ModelConfig(base_url=url, model="m", max_retries=0), api_key="sk-x")
    call = client.chat(HI, purpose="t")
    assert call.error is not None and call.error.startswith("refused: base_url:"), call.error
    assert listener.received == []


@pytest.mark.django_db
@pytest.mark.parametrize("index", range(len(forms(1))))
def test_every_form_is_refused_when_an_owner_saves_an_endpoint(client, alice, project, index):
    url = forms(8000)[index]
    client.force_login(alice)
    api = reverse("auditor:api-model-endpoints", args=[project.pk])
    r = client.post(api, {"name": "x", "base_url": url, "model": "m"}, "application/json")
    assert r.status_code == 400, r.content
    assert str(r.json()["base_url"]).startswith("base_url:")
    page = reverse("auditor:model-endpoints", args=[project.pk])
    r = client.post(page, {"name": "x", "base_url": url, "model": "m"})
    assert r.status_code == 400 and "base_url:" in r.content.decode()
    assert not ModelEndpoint.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("url,message", BAD_SHAPES)
def test_other_schemes_and_credentials_are_refused(client, alice, project, url, message):
    client.force_login(alice)
    api = reverse("auditor:api-model-endpoints", args=[project.pk])
    r = client.post(api, {"name": "x", "base_url": url}, "application/json")
    assert r.status_code == 400 and message in r.content.decode(), r.content
    assert "pw" not in r.content.decode()
    with pytest.raises(UrlRefused, match=message):
        AddressGuard().target(url)


def test_every_resolved_address_is_checked_and_the_checked_one_is_connected() -> None:
    """A name resolving to a public and a private address is refused (a rebinding server
    could hand out either); an allowed name's checked address is what the request connects
    to — the host is never resolved a second time."""
    two = AddressGuard(resolver=lambda host, port: ["93.184.216.34", "10.1.2.3"])
    with pytest.raises(UrlRefused, match="resolves to 10.1.2.3, a private address"):
        two.target("https://rebind.example/v1")
    server = FakeOpenAI().start()
    try:
        server.queue(Reply.text("ok"))
        calls: list[str] = []

        def resolve_once(host: str, port: int) -> list[str]:
            calls.append(host)
            return ["127.0.0.1"]

        guard = AddressGuard(["127.0.0.0/8"], resolver=resolve_once)
        url = server.url.replace("127.0.0.1", "model.invalid")  # not resolvable by the system
        call = ModelClient(ModelConfig(base_url=url, model="m"), guard=guard).chat(HI, purpose="t")
        assert call.ok, call.error
        assert calls == ["model.invalid"]
        port = server.url.split(":")[2].split("/")[0]
        assert server.requests[0].headers["Host"] == f"model.invalid:{port}"
    finally:
        server.stop()


def test_a_redirect_from_an_allowed_host_to_loopback_is_not_followed(listener: Listener) -> None:
    server = FakeOpenAI().start()
    try:
        target = f"http://127.0.0.1:{listener.port}/v1/chat/completions"
        server.queue(Reply(status=302, headers={"Location": target}))
        guard = AddressGuard(["127.0.0.1/32"])
        c = ModelClient(ModelConfig(base_url=server.url, model="m"), api_key="sk-x", guard=guard)
        call = c.chat(HI, purpose="t")
        assert call.error is not None and "redirect (HTTP 302)" in call.error
        assert "not followed" in call.error and server.count == 1
        assert listener.received == []
    finally:
        server.stop()


def test_allowed_hosts_name_exceptions_exactly() -> None:
    guard = AddressGuard.parse("vllm.internal, 10.0.5.0/24, ::1")
    assert guard.check_url("http://10.0.5.7:8000/v1", resolve=False) is None
    assert guard.check_url("http://[::1]:8000/v1", resolve=False) is None
    assert "private" in str(guard.check_url("http://10.0.6.7/v1", resolve=False))
    assert "loopback" in str(guard.check_url("http://127.0.0.1/v1", resolve=False))
    assert guard.check_url("http://vllm.internal:8000/v1", resolve=False) is None
    assert AddressGuard().check_url("https://api.openai.com/v1", resolve=False) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://" + "a" * 70 + ".example.com/v1",
        "http://x\x00y/v1",
        "http://\udcff/v1",
        "http://[::1/",
    ],
)
def test_malformed_hosts_are_a_400_never_a_500(client, alice, project, url):
    client.force_login(alice)
    api = reverse("auditor:api-model-endpoints", args=[project.pk])
    r = client.post(api, {"name": "x", "base_url": url}, "application/json")
    # A lone surrogate is refused when the body is parsed, before any field is read.
    said = r.content.decode()
    assert r.status_code == 400 and ("base_url" in said or "request body" in said), said
    runs = reverse("auditor:api-runs")
    for model in (
        {"endpoint": "x\x00"},
        {"endpoint": "\udcff"},
        {"endpoint": "e", "model": "m\x00"},
    ):
        body = {"project": project.name, "judge": "llm", "model": model}
        r = client.post(runs, body, "application/json")
        assert r.status_code == 400, (model, r.content)
