"""Where the clients find their tokens and TLS files: the environment, the CLIs' files."""

from __future__ import annotations

import json
import os
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit._config import platform_settings, secrets_settings
from toolkit._errors import ConfigurationError, TLSError
from toolkit.secrets import SecretsClient

VARIABLES = (
    "VAULT_ADDR", "BAO_ADDR", "VAULT_TOKEN", "BAO_TOKEN", "VAULT_CONFIG_PATH", "BAO_CONFIG_PATH",
    "VAULT_CLIENT_CERT", "BAO_CLIENT_CERT", "VAULT_CLIENT_KEY", "BAO_CLIENT_KEY",
    "VAULT_TLS_SERVER_NAME", "BAO_TLS_SERVER_NAME", "VAULT_CACERT", "BAO_CACERT",
    "TFE_ADDRESS", "TFE_TOKEN", "TF_CLI_CONFIG_FILE",
)  # fmt: skip


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME and an environment without any of the variables read here."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("TF_TOKEN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _private(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)
    return path


# -- the secrets server -----------------------------------------------------------------
def test_the_variable_wins_over_the_cli_token_file(home, monkeypatch):
    _private(home / ".vault-token", "s.from-file\n")
    settings = secrets_settings("http://bao.example")
    assert (settings.token, settings.token_source) == ("s.from-file", "~/.vault-token")
    monkeypatch.setenv("BAO_TOKEN", "s.from-bao")
    assert secrets_settings("http://bao.example").token_source == "BAO_TOKEN"
    monkeypatch.setenv("VAULT_TOKEN", "s.from-vault")
    assert secrets_settings("http://bao.example").token == "s.from-vault"
    assert secrets_settings("http://bao.example", "s.given").token_source == "argument"


def test_a_token_file_others_can_read_is_refused_without_showing_it(home):
    (home / ".vault-token").write_text("s.exposed")
    (home / ".vault-token").chmod(0o644)
    with pytest.raises(ConfigurationError, match="chmod 600") as caught:
        secrets_settings("http://bao.example")
    assert "s.exposed" not in str(caught.value)


def test_a_configured_token_helper_means_the_token_file_is_not_the_clis(home):
    _private(home / ".vault-token", "s.stale")
    (home / ".bao").write_text('token_helper = "/usr/local/bin/helper"\n')
    with pytest.raises(ConfigurationError, match="token helper '/usr/local/bin/helper'"):
        secrets_settings("http://bao.example")


def test_no_token_anywhere_says_every_place_to_put_one(home):
    with pytest.raises(ConfigurationError, match=r"VAULT_TOKEN.*vault-token.*for_login"):
        secrets_settings("http://bao.example")
    assert secrets_settings("http://bao.example", require_token=False).token == ""


def test_tls_files_and_server_name_come_from_either_spelling(home, monkeypatch):
    monkeypatch.setenv("BAO_CLIENT_CERT", "/etc/bao/client.pem")
    monkeypatch.setenv("VAULT_CLIENT_KEY", "/etc/bao/client-key.pem")
    monkeypatch.setenv("VAULT_TLS_SERVER_NAME", "bao.internal")
    settings = secrets_settings("https://10.0.0.5:8200", "s.x")
    assert (settings.client_cert, settings.client_key, settings.server_name) == (
        "/etc/bao/client.pem",
        "/etc/bao/client-key.pem",
        "bao.internal",
    )
    assert "s.x" not in repr(settings)


def test_an_unreadable_client_certificate_is_a_configuration_error(home, tmp_path):
    with pytest.raises(ConfigurationError, match="cannot load client certificate"):
        SecretsClient("https://127.0.0.1:1", "s.x", client_cert=str(tmp_path / "none.pem"))


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A TLS listener whose certificate names only 127.0.0.1; the handshake's outcome is
    all the tests need (a client that refuses the name never sends a request)."""
    from tests._sockets import certificate_files

    ca, cert, key = certificate_files(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)  # so that the loop sees `stop`
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(10)
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(65536)
                    body = b'{"data": {"ok": true}}'
                    tls.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
                    )
            except (OSError, ssl.SSLError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], ca
    stop.set()
    listener.close()
    thread.join(5)


def test_the_server_name_is_what_the_certificate_is_checked_against(home, tls_server):
    port, ca = tls_server
    address = f"https://127.0.0.1:{port}"
    with SecretsClient(address, "s.x", ca_file=str(ca)) as client:
        assert client.http.json("GET", "/anything") == {"data": {"ok": True}}
    with (
        SecretsClient(address, "s.x", ca_file=str(ca), server_name="bao.internal") as client,
        pytest.raises(TLSError),
    ):
        client.http.json("GET", "/anything")


# -- the platform ---------------------------------------------------------------------
ADDRESS = "https://tfe-prod.example.com"


def test_tfe_token_wins_over_everything_the_terraform_cli_uses(home, monkeypatch):
    monkeypatch.setenv("TF_TOKEN_tfe__prod_example_com", "from-env-var")
    monkeypatch.setenv("TFE_TOKEN", "from-tfe-token")
    assert platform_settings(ADDRESS).token_source == "TFE_TOKEN"


def test_tf_token_variables_encode_dots_and_dashes(home, monkeypatch):
    monkeypatch.setenv("TF_TOKEN_tfe__prod_example_com", "from-env-var")
    _private(home / ".terraformrc", 'credentials "tfe-prod.example.com" { token = "from-rc" }\n')
    settings = platform_settings(ADDRESS)
    assert (settings.token, settings.token_source) == (
        "from-env-var",
        "TF_TOKEN_tfe__prod_example_com",
    )


def test_a_credentials_block_of_the_cli_configuration_comes_next(home, monkeypatch):
    _private(
        home / ".terraform.d" / "credentials.tfrc.json",
        json.dumps({"credentials": {"tfe-prod.example.com": {"token": "from-json"}}}),
    )
    _private(
        home / ".terraformrc",
        'credentials "other.example.com" {\n  token = "not-this"\n}\n'
        'credentials "tfe-prod.example.com" {\n  token = "from-rc"\n}\n',
    )
    assert platform_settings(ADDRESS).token == "from-rc"
    elsewhere = _private(
        home / "cli.tfrc", 'credentials "tfe-prod.example.com" { token = "from-tf-cli-config" }\n'
    )
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(elsewhere))
    assert platform_settings(ADDRESS).token == "from-tf-cli-config"


def test_the_terraform_login_file_gives_the_hosts_entry_last(home):
    _private(
        home / ".terraform.d" / "credentials.tfrc.json",
        json.dumps(
            {
                "credentials": {
                    "app.terraform.io": {"token": "for-another-host"},
                    "TFE-Prod.example.com": {"token": "from-json"},
                }
            }
        ),
    )
    settings = platform_settings(ADDRESS)
    assert settings.token == "from-json"
    assert settings.token_source.endswith("credentials.tfrc.json")


def test_no_platform_token_names_the_variable_and_terraform_login(home):
    with pytest.raises(
        ConfigurationError, match=r"TF_TOKEN_tfe__prod_example_com.*terraform login"
    ):
        platform_settings(ADDRESS)


def test_a_credentials_file_others_can_read_is_refused(home):
    path = home / ".terraform.d" / "credentials.tfrc.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"credentials": {"tfe-prod.example.com": {"token": "leaky"}}}))
    path.chmod(0o644)
    with pytest.raises(ConfigurationError, match="other users") as caught:
        platform_settings(ADDRESS)
    assert "leaky" not in str(caught.value)
