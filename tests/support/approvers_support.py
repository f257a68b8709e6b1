"""The approvals page's world in a test: a real OpenID Connect provider (`oidc-provider-mock`,
a Flask server in its own process on 127.0.0.1), `signoff serve` as a real process with the
page configured and no Slack, and a signed-in browser session through the provider's form."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .dev_page import wait_for
from .helpers import AUTH
from .helpers import SIGNOFF
from .helpers import TOKEN
from .helpers import clean_env
from .helpers import free_port

CLIENT_ID, CLIENT_SECRET = "signoff-page", "page-client-secret"
SESSION_SECRET = "approvals-page-session-secret"
BOB_MAIL, ANN_MAIL, EVE_MAIL, REQ_MAIL = (
    "bob@example.com",
    "ann@example.com",
    "eve@example.com",
    "req@example.com",
)
BOB, ANN, REQUESTER = "U0BOB", "U0ANN", "U0REQ"
PEOPLE_MAP = {BOB_MAIL: BOB, ANN_MAIL: ANN, REQ_MAIL: REQUESTER}
PEOPLE = f"""
[people]
"{BOB_MAIL}" = "{BOB}"
"{ANN_MAIL}" = "{ANN}"
"{REQ_MAIL}" = "{REQUESTER}"
"""


def wait_until(check: Callable[[], Any], within: float = 30.0) -> Any:
    deadline = time.monotonic() + within
    while True:
        try:
            found = check()
        except (urllib.error.URLError, ConnectionError):
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {within} s")
        time.sleep(0.1)


@contextmanager
def oidc_provider(folder: Path) -> Iterator[str]:
    """A real OpenID Connect provider on a free port: its issuer URL. It signs in whoever
    is typed into its form, with that text as the e-mail claim."""
    port = free_port()
    log = folder / f"oidc-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "oidc_provider_mock", "-p", str(port), "-n", "true"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    issuer = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _get(f"{issuer}/.well-known/openid-configuration")[0] == 200)
        yield issuer
    finally:
        process.terminate()
        process.wait(10)


class PageServer:
    """`signoff serve` with the approvals page on, no Slack, the refund agent."""

    def __init__(
        self, folder: Path, issuer: str | None, config: str = "", *, host: str = "127.0.0.1"
    ) -> None:
        """`host`: the name the page is reached by (`localhost` for passkeys: WebAuthn takes
        no IP address for a site)."""
        self.port = free_port()
        self.base = f"http://{host}:{self.port}"
        self.folder = folder
        signin = (
            f'oidc_issuer = "{issuer}"\noidc_client_id = "{CLIENT_ID}"\n'
            f'oidc_client_secret = "{CLIENT_SECRET}"\n'
            if issuer
            else ""
        )
        (folder / "signoff.toml").write_text(
            f'public_url = "{self.base}"\nsession_secret = "{SESSION_SECRET}"\n'
            f"api_only = true\n{signin}{config}{PEOPLE}",
            "utf-8",
        )
        env = clean_env("SIGNOFF_", "SLACK_") | {
            "SIGNOFF_DATABASE_URL": f"sqlite:///{folder / 'signoff.db'}",
            "SIGNOFF_WORLD_DB": str(folder / "world.db"),
            "SIGNOFF_API_TOKEN": TOKEN,
            "SIGNOFF_PORT": str(self.port),
        }
        self.log = folder / f"serve-{self.port}.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [SIGNOFF, "serve"], cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        wait_until(lambda: self.get("/healthz")[0] == 200, within=60)

    def get(self, path: str) -> tuple[int, Any]:
        return _get(self.base + path, AUTH)

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for name, value in AUTH.items():
            request.add_header(name, value)
        return _send(request)

    def start_run(self, run_id: str, task: str = "Refund order 4471") -> None:
        body = {"agent": "refund-agent", "task": task, "run_id": run_id}
        status, _ = self.api("POST", "/v1/runs", body | {"requested_by": REQUESTER})
        assert status in (200, 201, 202), status

    def pending(self, run_id: str) -> dict[str, Any]:
        """The run's pending approval, once it asked."""

        def asked() -> dict[str, Any] | None:
            _, found = self.get(f"/v1/approvals?run_id={run_id}&state=pending")
            items = found.get("approvals") or found.get("items") or []
            return items[0] if items else None

        return dict(wait_until(asked))

    def approval(self, approval_id: str) -> dict[str, Any]:
        return dict(self.get(f"/v1/approvals/{approval_id}")[1])

    def stop(self) -> int:
        self.process.terminate()
        return self.process.wait(20)


@contextmanager
def page_server(folder: Path, config: str, *, host: str = "127.0.0.1") -> Iterator[PageServer]:
    """A `PageServer` signing people in through its own OpenID Connect provider; it must
    stop cleanly at the end."""
    with oidc_provider(folder) as issuer:
        server = PageServer(folder, issuer, config, host=host)
        yield server
        assert server.stop() == 0, server.log.read_text()


def ask(server: PageServer, args: dict[str, Any], requester: str) -> str:
    """A refund asked for over the API (no run): its approval's id."""
    body = {"tool": "issue_refund", "args": args, "requested_by": requester}
    status, answer = server.api("POST", "/v1/approvals", body)
    assert status in (200, 201), answer
    return str(answer["id"])


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    return _send(request)


def _send(request: urllib.request.Request) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, _parsed(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, _parsed(exc.read())


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page[:2000]
    return found[1]


class Clients:
    """HTTP clients a test opens, each closed at its end."""

    def __init__(self) -> None:
        self.opened: list[Any] = []

    def new(self) -> Any:
        import httpx

        client = httpx.Client(follow_redirects=False, timeout=30)
        self.opened.append(client)
        return client

    def close(self) -> None:
        for client in self.opened:
            client.close()


def sign_in(clients: Clients, base: str, email: str) -> Any:
    """An HTTP client signed in to the page as `email`, through the provider's own form."""
    client = clients.new()
    to_provider = client.get(base + "/approvals/login")
    assert to_provider.status_code == 303, to_provider.text
    back = client.post(to_provider.headers["location"], data={"sub": email})
    assert back.status_code == 302, back.text
    landed = client.get(back.headers["location"])
    assert landed.status_code == 303, landed.text
    return client


def browser_sign_in(browser: Any, base: str, email: str) -> None:
    """Open the page, follow it to the provider, type the person in, come back signed in."""
    from selenium.webdriver.common.by import By

    wait = wait_for(browser)
    browser.get(base + "/approvals")
    field = wait.until(lambda d: d.find_element(By.NAME, "sub"))
    field.send_keys(email)
    field.submit()
    wait.until(lambda d: d.find_elements(By.ID, "person"))
