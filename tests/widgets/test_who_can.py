"""WhoCanForm: ask who can, explain one answer, say what could not be read."""

from __future__ import annotations

from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from widgets import WhoCanForm
from widgets._common import output_text


def test_asking_shows_the_principals_and_explaining_shows_the_deciding_pattern(
    secrets_client: SecretsClient,
) -> None:
    form = WhoCanForm(secrets_client, "update", "sys/policies/acl/anything")
    form.ask_button.click()
    assert form.answer is not None
    assert "auth/userpass/users/olivia" in form.answer.index
    assert "auth/userpass/users/olivia" in output_text(form.answer_table)
    assert "principal(s) can update sys/policies/acl/anything" in form.status_text
    form.principal.value = "auth/userpass/users/olivia"
    form.explain_button.click()
    assert form.explanation is not None
    assert form.explanation.iloc[0]["pattern"] == "sys/policies/*"
    assert "sys/policies/*" in output_text(form.explain_table)


def test_an_empty_path_is_refused_with_what_to_type(secrets_client: SecretsClient) -> None:
    form = WhoCanForm(secrets_client)
    form.ask_button.click()
    assert "a path is required" in form.status_text
    assert form.answer is None


def test_an_answer_with_unread_parts_says_it_is_incomplete(sandbox: Sandbox) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.policies.write(
            "acl", "blind", 'path "sys/policies/acl*" { capabilities = ["read", "list"] }'
        )
        token = root.tokens.create(["blind"])["client_token"].reveal()
    with SecretsClient(sandbox.address, token) as blind:
        form = WhoCanForm(blind, "update", "nothing/here")
        form.ask_button.click()
    assert "incomplete" in form.status_text
    assert "auth/token/accessors" in form.status_text


def test_a_path_copied_from_a_url_is_read_without_v1_and_the_form_says_so(
    secrets_client: SecretsClient,
) -> None:
    plain = WhoCanForm(secrets_client, "update", "sys/policies/acl/anything")
    plain.ask_button.click()
    form = WhoCanForm(secrets_client, "update", "/v1/sys/policies/acl/anything")
    form.ask_button.click()
    assert form.answer is not None and plain.answer is not None
    assert list(form.answer.index) == list(plain.answer.index)
    assert "the API prefix '/v1/' left out" in form.status_text
    assert f"{len(plain.answer)} principal(s) can update sys/policies/acl/anything" in (
        form.status_text
    )


def test_explaining_a_pattern_that_lacks_the_capability_says_denied(
    secrets_client: SecretsClient,
) -> None:
    # olivia's deciding pattern there, sys/policies/*, grants writes but not sudo.
    form = WhoCanForm(secrets_client, "sudo", "sys/policies/acl/anything")
    form.ask_button.click()
    assert form.answer is not None
    assert "auth/userpass/users/olivia" not in form.answer.index
    form.principal.options = ["auth/userpass/users/olivia"]
    form.principal.value = "auth/userpass/users/olivia"
    form.explain_button.click()
    assert form.explanation is not None
    first = form.explanation.iloc[0]
    assert first["pattern"] == "sys/policies/*"
    assert first["outcome"] == "decides: denied, the pattern does not grant 'sudo'"
    assert "denied, the pattern does not grant 'sudo'" in form.status_text
