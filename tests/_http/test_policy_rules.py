"""The HTTP layer's rules of repetition, each on its own: which call may go again, after
what pause, and which error an answer or a failure becomes (toolkit/_http/policy.py)."""

from __future__ import annotations

import asyncio
import math
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from toolkit._errors import (
    ConnectError,
    InputError,
    NotFound,
    OutcomeUnknown,
    PermissionDenied,
    ProtocolError,
    RateLimited,
    Redirected,
    ServerError,
    TimeoutError,
    TLSError,
    TransportError,
    WriteTimedOut,
)
from toolkit._http.policy import (
    Failure,
    RetryPolicy,
    api_error,
    judge,
    mask,
    repeatable,
    server_pause,
)
from toolkit._http.response import Response
from toolkit._masking import Sensitive

POLICY = RetryPolicy(attempts=3, backoff=0.5, max_pause=4.0)


def answer(status: int, body: bytes = b"", **headers: str) -> Response:
    return Response(status, {k.replace("_", "-"): v for k, v in headers.items()}, body, "GET", "u")


def decide(
    *,
    response: Response | None = None,
    failure: Failure | None = None,
    method: str = "GET",
    attempt: int = 1,
    budget: float = math.inf,
    ok: frozenset[int] = frozenset(),
) -> float | None:
    return judge(
        POLICY,
        method,
        "https://h/v1/x",
        "h:8200",
        may_repeat=repeatable(method, None),
        attempt=attempt,
        ok=ok,
        check="read it back",
        response=response,
        failure=failure,
        budget=budget,
    )


def test_reads_may_be_sent_again_and_a_call_site_may_say_otherwise() -> None:
    assert all(repeatable(m, None) for m in ("GET", "HEAD", "LIST", "OPTIONS"))
    assert not repeatable("POST", None) and not repeatable("PUT", None)
    assert repeatable("POST", True) and not repeatable("GET", False)


def test_pauses_double_from_the_backoff_up_to_the_cap() -> None:
    assert [POLICY.pause(n, None) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert RetryPolicy().pause(1, None) == 0.2 and RetryPolicy().attempts == 4
    assert RetryPolicy().max_pause == 30.0 and RetryPolicy().statuses == {429, 502, 503, 504}


def test_a_dropped_connection_goes_again_at_once_then_after_the_usual_pauses() -> None:
    assert POLICY.pause(1, None, dropped=True) == 0.0
    assert POLICY.pause(2, None, dropped=True) == 0.5
    assert POLICY.pause(3, None, dropped=True) == 1.0


def test_the_servers_pause_wins_within_zero_and_the_cap() -> None:
    assert POLICY.pause(3, answer(429, Retry_After="1.5")) == 1.5
    assert POLICY.pause(1, answer(429, Retry_After="99")) == 4.0
    assert POLICY.pause(1, answer(429, Retry_After="-3")) == 0.0
    assert POLICY.pause(2, answer(503)) == 1.0


def test_the_server_asks_for_a_pause_in_seconds_an_epoch_time_or_a_date() -> None:
    assert server_pause({}) is None
    assert server_pause({"Retry-After": "7"}) == 7.0
    assert server_pause({"X-RateLimit-Reset": "5", "Retry-After": "7"}) == 5.0
    assert server_pause({"X-RateLimit-Reset": "1000000000"}) == 1e9
    epoch = server_pause({"X-RateLimit-Reset": str(time.time() + 20)})
    assert epoch is not None and 18 < epoch <= 20
    date = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    waited = server_pause({"Retry-After": date})
    assert waited is not None and 55 < waited <= 60
    naive = (datetime.now(UTC) + timedelta(seconds=60)).strftime("%a, %d %b %Y %H:%M:%S")
    waited = server_pause({"Retry-After": naive})
    assert waited is not None and 55 < waited <= 60


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"Retry-After": "soon"}, "Retry-After header is neither a number of seconds nor a date"),
        ({"X-RateLimit-Reset": "soon"}, "X-RateLimit-Reset header is not a number"),
        ({"X-RateLimit-Reset": "inf"}, "X-RateLimit-Reset header is not a finite number"),
        ({"Retry-After": "nan"}, "neither a number of seconds nor a date"),
    ],
)
def test_a_pause_header_that_is_not_a_number_is_refused_naming_it(
    headers: dict[str, str], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        server_pause(headers)


def test_a_request_the_library_refused_is_bad_input_never_sent() -> None:
    with pytest.raises(InputError, match=r"^GET https://h/v1/x: not sent: bad header$"):
        decide(failure=Failure("refused", "bad header"))


def test_a_tls_failure_is_never_retried_and_names_the_proxy() -> None:
    with pytest.raises(TLSError, match="TLS failure with h:8200 through the proxy p:3128: bad"):
        decide(failure=Failure("tls", "bad", via="p:3128"))


def test_a_connection_never_opened_is_tried_again_for_any_method_until_the_last_try() -> None:
    assert decide(failure=Failure("connect", "refused"), method="POST") == 0.5
    assert decide(failure=Failure("connect", "refused"), attempt=2) == 1.0
    with pytest.raises(ConnectError, match="cannot connect to h:8200: refused"):
        decide(failure=Failure("connect", "refused"), attempt=3)
    with pytest.raises(ConnectError):
        decide(failure=Failure("connect", "refused"), budget=0.5)
    assert decide(failure=Failure("connect", "refused"), budget=0.6) == 0.5


def test_a_write_that_timed_out_is_never_sent_again_and_says_how_to_check() -> None:
    with pytest.raises(WriteTimedOut) as caught:
        decide(failure=Failure("timeout", "slow"), method="POST")
    assert "no answer within the timeout" in str(caught.value)
    assert "Check before trying again: read it back." in str(caught.value)
    assert caught.value.check == "read it back"


def test_a_read_that_timed_out_is_tried_again_until_its_tries_or_time_run_out() -> None:
    assert decide(failure=Failure("timeout", "slow")) == 0.5
    with pytest.raises(TimeoutError, match="no answer within the timeout") as caught:
        decide(failure=Failure("timeout", "slow"), attempt=3)
    assert not isinstance(caught.value, WriteTimedOut)
    with pytest.raises(TimeoutError):
        decide(failure=Failure("timeout", "slow"), budget=0.5)


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("dropped", "the connection to h:8200 broke before an answer (x)"),
        ("malformed", "the answer from h:8200 was malformed (x)"),
        ("oversize", "the answer from h:8200 was too large (x)"),
    ],
)
def test_a_write_whose_answer_was_lost_has_an_unknown_outcome(kind: str, says: str) -> None:
    with pytest.raises(OutcomeUnknown) as caught:
        decide(failure=Failure(kind, "x"), method="POST")  # type: ignore[arg-type]
    assert says in str(caught.value) and "it was not sent again" in str(caught.value)


def test_a_read_whose_connection_dropped_goes_again_and_a_broken_answer_does_not() -> None:
    assert decide(failure=Failure("dropped", "reset")) == 0.0
    assert decide(failure=Failure("dropped", "reset"), attempt=2) == 0.5
    with pytest.raises(TransportError, match="h:8200 broke the connection: reset") as caught:
        decide(failure=Failure("dropped", "reset"), attempt=3)
    assert type(caught.value) is TransportError
    with pytest.raises(TransportError):
        decide(failure=Failure("dropped", "reset"), attempt=2, budget=0.5)
    with pytest.raises(ProtocolError, match="h:8200 sent a malformed answer: x"):
        decide(failure=Failure("malformed", "x"))
    with pytest.raises(ProtocolError, match="h:8200 sent an answer too large: x"):
        decide(failure=Failure("oversize", "x"))


def test_success_not_modified_and_statuses_the_caller_expects_stand() -> None:
    assert decide(response=answer(200)) is None
    assert decide(response=answer(299)) is None
    assert decide(response=answer(304)) is None
    assert decide(response=answer(404), ok=frozenset({404})) is None
    with pytest.raises(NotFound):
        decide(response=answer(404))


def test_a_429_is_waited_out_for_every_method_and_503_only_for_repeatable_calls() -> None:
    assert decide(response=answer(429), method="POST") == 0.5
    assert decide(response=answer(503)) == 0.5
    assert decide(response=answer(504), attempt=2) == 1.0
    with pytest.raises(ServerError):
        decide(response=answer(503), method="POST")
    with pytest.raises(RateLimited):
        decide(response=answer(429), attempt=3)
    with pytest.raises(ServerError):
        decide(response=answer(500))


def test_a_gateway_error_on_a_write_leaves_its_outcome_unknown() -> None:
    for status in (502, 504):
        with pytest.raises(OutcomeUnknown, match=f"a gateway answered {status}"):
            decide(response=answer(status), method="POST")
    with pytest.raises(ServerError):
        decide(response=answer(502), attempt=3)


def test_a_pause_beyond_the_calls_time_ends_it_saying_so() -> None:
    with pytest.raises(RateLimited) as caught:
        decide(response=answer(429, Retry_After="3"), budget=2.0)
    assert caught.value.messages[0] == (
        "the server asked for a pause of 3 s before trying again, beyond the 2 s left "
        "of this call's time; not tried again"
    )
    with pytest.raises(RateLimited, match="beyond the 0 s left"):
        decide(response=answer(429, Retry_After="3"), budget=-1.0)


def test_a_retryable_answer_with_a_bad_pause_header_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="h:8200 answered 429, and its Retry-After header"):
        decide(response=answer(429, Retry_After="later"))


def test_the_clients_credentials_are_masked_in_the_servers_words() -> None:
    token = (Sensitive("s.longtoken"), Sensitive("Bearer abcdefgh123"), Sensitive("root"))
    text = "bad s.longtoken; bad abcdefgh123; root stays"
    assert mask(text, token) == "bad <hidden>; bad <hidden>; root stays"
    assert mask("Bearer abcdefgh123", token) == "<hidden>"
    assert mask("12345678", (Sensitive("12345678"),)) == "<hidden>"
    assert mask("1234567", (Sensitive("1234567"),)) == "1234567"
    assert mask("x y", (Sensitive("x y"),)) == "x y"


def test_an_error_answer_carries_the_servers_messages_in_every_form() -> None:
    plain = api_error(answer(400, b'{"errors": ["one\\ntwo", 3]}'), "GET", "u")
    assert plain.messages == ["one two"] and plain.errors == ["one\ntwo", 3]
    jsonapi = api_error(
        answer(
            422,
            b'{"errors": [{"title": "Invalid", "detail": "name taken",'
            b' "source": {"pointer": "/data/name"}}, {"title": "Only"},'
            b' {"detail": "Invalid: again", "title": "Invalid"}]}',
        ),
        "POST",
        "u",
    )
    assert jsonapi.messages == [
        "Invalid: name taken (/data/name)",
        "Only",
        "Invalid: again",
    ]
    message = api_error(answer(403, b'{"message": "no"}'), "GET", "u")
    assert message.messages == ["no"] and message.status == 403
    assert api_error(answer(500, b'{"other": 1}'), "GET", "u").messages == []


def test_an_error_page_gives_its_title_or_its_first_words() -> None:
    page = b"<html><title>502 Bad Gateway</title><body>nginx</body></html>"
    assert api_error(answer(502, page, content_type="text/html"), "GET", "u").messages == [
        "502 Bad Gateway"
    ]
    body = b"<html><body><p>gone</p></body></html>"
    assert api_error(answer(404, body, content_type="Text/HTML"), "GET", "u").messages == ["gone"]
    text = api_error(answer(500, b"x" * 300 + b"\n"), "GET", "u")
    assert text.messages == ["x" * 200]
    assert api_error(answer(500, b"   "), "GET", "u").messages == []


def test_the_layers_note_comes_first_and_cookies_stay_out() -> None:
    response = answer(301, b'{"errors": ["moved"]}', Set_Cookie="s=1", Location="/x")
    response.note = "not followed"
    error = api_error(response, "GET", "u")
    assert error.messages == ["not followed", "moved"]
    assert "Set-Cookie" not in error.headers and error.headers["Location"] == "/x"
    assert error.method == "GET" and error.url == "u"


def test_the_clients_credentials_are_masked_in_every_string_of_a_json_error() -> None:
    secret = (Sensitive("s.longtoken"),)
    body = (
        b'{"errors": ["bad s.longtoken", {"detail": "s.longtoken here", "n": 1,'
        b' "s.longtoken": ["s.longtoken"]}]}'
    )
    error = api_error(answer(403, body, X_Echo="s.longtoken"), "GET", "u", secret)
    assert error.messages == ["bad <hidden>", "<hidden> here"]
    assert error.errors == [
        "bad <hidden>",
        {"detail": "<hidden> here", "n": 1, "<hidden>": ["<hidden>"]},
    ]
    assert error.headers["X-Echo"] == "<hidden>"
    words = api_error(answer(403, b'{"message": "s.longtoken"}'), "GET", "u", secret)
    assert words.messages == ["<hidden>"]
    page = api_error(
        answer(500, b"<title>s.longtoken</title>", content_type="text/html"), "GET", "u", secret
    )
    assert page.messages == ["<hidden>"]


def test_an_unknown_outcome_without_a_way_to_check_says_to_read_the_record_back() -> None:
    with pytest.raises(WriteTimedOut) as caught:
        judge(
            POLICY,
            "POST",
            "u",
            "h",
            may_repeat=False,
            attempt=1,
            ok=frozenset(),
            check="",
            response=None,
            failure=Failure("timeout", "slow"),
        )
    assert str(caught.value).endswith("Check before trying again: read the record back.")


def test_an_error_without_error_objects_has_none() -> None:
    assert api_error(answer(403, b'{"message": "no"}'), "GET", "u").errors == []
    assert api_error(answer(403, b'{"errors": "no"}'), "GET", "u").errors == []


def test_an_error_page_is_read_for_its_first_2048_characters_title_first() -> None:
    from toolkit._http.policy import _html_words

    assert _html_words("a" * 2048 + "b") == "a" * 2048
    assert _html_words("<p>first</p><title>The title</title>") == "The title"
    assert _html_words("<title>502<br>Bad</title>") == "502 Bad"
    assert _html_words("<p>one</p><p>two</p>") == "one two"
    assert _html_words("<title>T</title><p>after</p>") == "T"


@pytest.mark.parametrize(
    ("method", "failure", "response", "attempt"),
    [
        ("GET", Failure("tls", "x"), None, 1),
        ("GET", Failure("connect", "x"), None, 3),
        ("GET", Failure("timeout", "x"), None, 3),
        ("POST", Failure("timeout", "x"), None, 1),
        ("POST", Failure("dropped", "x"), None, 1),
        ("POST", Failure("malformed", "x"), None, 1),
        ("POST", Failure("oversize", "x"), None, 1),
        ("GET", Failure("malformed", "x"), None, 1),
        ("GET", Failure("oversize", "x"), None, 1),
        ("GET", Failure("dropped", "x"), None, 3),
        ("GET", None, answer(429, Retry_After="soon"), 1),
        ("POST", None, answer(502), 1),
        ("POST", None, answer(504), 1),
        ("PATCH", None, answer(404), 1),
    ],
)
def test_every_error_names_the_method_and_address_of_the_call(
    method: str, failure: Failure | None, response: Response | None, attempt: int
) -> None:
    with pytest.raises((TransportError, NotFound)) as caught:
        decide(method=method, failure=failure, response=response, attempt=attempt)
    error = caught.value
    assert error.method == method and error.url == "https://h/v1/x"
    assert str(error).startswith(f"{method} https://h/v1/x")
    if isinstance(error, OutcomeUnknown):
        assert error.check == "read it back"
        assert str(error).endswith("Check before trying again: read it back.")


def _tries(
    verdicts: list[float | None | Exception],
    *,
    pause: float = 0.0,
    attempts: int = 4,
    numbers: list[int] | None = None,
) -> tuple[list[int], list[float], Response]:
    """Run the tries after the first against answers numbered in turn: the try numbers
    the verdict was asked about (also into ``numbers``), when each try went, and the
    answer that stood."""
    from toolkit._http.policy import tries_after_the_first

    numbers = [] if numbers is None else numbers
    sent: list[float] = []
    answers = iter(answer(200 + n) for n in range(len(verdicts)))

    async def attempt() -> Response | Failure:
        sent.append(time.monotonic())
        return next(answers)

    def verdict(number: int, result: Response | Failure) -> float | None:
        assert isinstance(result, Response) and result.status_code == 200 + len(numbers)
        numbers.append(number)
        said = verdicts[len(numbers) - 1]
        if isinstance(said, Exception):
            raise said
        return said

    began = time.monotonic()
    stood = asyncio.run(tries_after_the_first(attempt, verdict, pause, attempts))
    return numbers, [t - began for t in sent], stood


def test_the_tries_after_the_first_wait_each_pause_and_stop_at_the_answer_that_stands() -> None:
    numbers, sent, stood = _tries([0.05, 0.1, None], pause=0.05)
    assert numbers == [2, 3, 4]  # the first try was number 1
    assert stood.status_code == 202  # the third answer after the first, as it came
    # (the verdict was asked about each answer in turn: 200, 201, then 202)
    assert sent[0] >= 0.05 and sent[1] - sent[0] >= 0.05 and sent[2] - sent[1] >= 0.1


def test_the_tries_after_the_first_are_as_many_as_the_attempts_left() -> None:
    with pytest.raises(ValueError, match="^the last try failed$"):
        _tries([0.0, 0.0, ValueError("the last try failed")], attempts=4)
    numbers, _, _ = _tries([None], attempts=1)
    assert numbers == [2]  # a policy of one attempt still makes the try it was asked for
    asked: list[int] = []
    with pytest.raises(Exception):  # noqa: B017, PT011 - whatever ends it, no fifth try
        _tries([0.0, 0.0, 0.0, None], attempts=4, numbers=asked)
    assert asked == [2, 3, 4]
    asked.clear()
    with pytest.raises(Exception):  # noqa: B017, PT011 - a policy of one attempt: one more
        _tries([0.0, None], attempts=1, numbers=asked)
    assert asked == [2]
    with pytest.raises(ValueError, match="^the verdict says stop$"):
        _tries([ValueError("the verdict says stop")], attempts=2)


def test_a_rate_limit_reset_past_a_billion_seconds_is_an_epoch_time() -> None:
    past = server_pause({"X-RateLimit-Reset": "1000000001"})  # 2001-09-09, long gone
    assert past is not None and past < 0
    assert POLICY.pause(1, answer(429, X_RateLimit_Reset="1000000001")) == 0.0


def test_a_write_that_timed_out_says_so_in_full() -> None:
    with pytest.raises(WriteTimedOut) as caught:
        decide(failure=Failure("timeout", "slow"), method="POST")
    assert str(caught.value) == (
        "POST https://h/v1/x: no answer within the timeout. The request was sent, so the "
        "server may or may not have acted on it; it was not sent again. Check before trying "
        "again: read it back."
    )


def test_a_3xx_answer_the_caller_did_not_expect_is_an_error() -> None:
    with pytest.raises(Redirected):
        decide(response=answer(300))
    with pytest.raises(Redirected):
        decide(response=answer(301, Location="/elsewhere"))


def test_a_servers_pause_that_uses_up_the_calls_time_ends_the_call() -> None:
    with pytest.raises(RateLimited):
        decide(response=answer(429, Retry_After="2"), budget=2.0)
    assert decide(response=answer(429, Retry_After="2"), budget=2.01) == 2.0
    with pytest.raises(ServerError):
        decide(response=answer(503, Retry_After="2"), budget=2.0)


def test_the_clients_credentials_are_masked_in_an_error_answer_judged() -> None:
    with pytest.raises(PermissionDenied) as caught:
        judge(
            POLICY,
            "GET",
            "u",
            "h",
            may_repeat=True,
            attempt=1,
            ok=frozenset(),
            check="",
            response=answer(403, b'{"errors": ["token s.longtoken is not allowed"]}'),
            failure=None,
            secrets=(Sensitive("s.longtoken"),),
        )
    assert caught.value.messages == ["token <hidden> is not allowed"]


def test_a_credential_after_its_scheme_is_masked_alone_words_and_all() -> None:
    scheme = (Sensitive("Token abcdefgh ijklmnop"),)
    assert mask("echo: abcdefgh ijklmnop", scheme) == "echo: <hidden>"


def test_a_secret_of_several_words_without_a_scheme_is_masked_only_whole() -> None:
    # Its first word is no scheme (not letters only): its other words are not a
    # credential of their own, and the server's words that match them stay readable.
    phrase = (Sensitive("s.1 dormant mountain"),)
    assert mask("dormant mountain; s.1 dormant mountain", phrase) == ("dormant mountain; <hidden>")


def test_an_error_objects_source_is_named_once_and_only_when_it_has_a_pointer() -> None:
    error = api_error(
        answer(
            422,
            b'{"errors": [{"detail": "bad /data/name", "source": {"pointer": "/data/name"}},'
            b' {"detail": "bad query", "source": {"parameter": "q"}},'
            b' {"detail": "bad page", "source": {"pointer": ""}}]}',
        ),
        "POST",
        "u",
    )
    assert error.messages == ["bad /data/name", "bad query", "bad page"]
