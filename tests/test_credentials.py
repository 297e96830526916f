"""Credentials masked in text a tool shows (toolkit.credentials, toolkit.urls; issue 41, point 3): the secret value
only, wherever a header, a URL or a server's echo carries it; text without credentials comes back unchanged.

The commands' own tests run this through real servers (tests/annotate/test_annotate_bad_answers.py,
tests/trb/test_served_bad_answers.py); here is the table of forms, each checked in milliseconds."""

from __future__ import annotations

import base64

import pytest

from toolkit.credentials import mask_credentials
from toolkit.urls import redact_url, url_secrets

BASIC = base64.b64encode(b"admin:hunter2-pw").decode()

MASKED = [
    (f"Authorization: Basic {BASIC}", (), "Authorization: Basic ***"),
    ("authorization: bearer sk-0123456789", (), "authorization: bearer ***"),
    ('{"headers": {"Authorization": "Token abc123def456", "Host": "ls"}}', (),
     '{"headers": {"Authorization": "Token ***", "Host": "ls"}}'),
    ("[('authorization', b'Bearer abc.def.ghi'), ('host', 'ls')]", (), "[('authorization', b'Bearer ***'), ('host', 'ls')]"),
    ("HTTP_AUTHORIZATION=Basic dXNlcjpwdw== next", (), "HTTP_AUTHORIZATION=Basic *** next"),
    ("Proxy-Authorization: Digest xyz", (), "Proxy-Authorization: Digest ***"),
    ("{'HTTP_AUTHORIZATION': 'Token abcdef'}", (), "{'HTTP_AUTHORIZATION': 'Token ***'}"),
    ("Cookie: sessionid=abc; csrftoken=def\nHost: ls", (), "Cookie: ***\nHost: ls"),
    ("X-Api-Key: 0123abcd", (), "X-Api-Key: ***"),
    (f"sent Basic {BASIC} alone", (), "sent Basic *** alone"),
    ("GET /api/x;jsessionid=ABCDEF123;lang=en HTTP/1.1", (), "GET /api/x;jsessionid=***;lang=en HTTP/1.1"),
    ("at http://admin:pw@ls:8/app;token=SEC/y?page=2&api_key=zz#access_token=TT", (),
     "at http://ls:8/app;token=***/y?page=2&api_key=***#access_token=***"),
    ("key k in ?token=k&page=2 and 'Token k'.", ("k",), "key *** in ?token=***&page=2 and 'Token ***'."),
    ("tracebacks keep-alive kk k.", ("k",), "tracebacks keep-alive kk ***."),
    ("ab12 xab12 ab123 %3Dab12", ("ab12",), "*** xab12 ab123 %3D***"),
    ("long0123456789key inside xlong0123456789keyx", ("long0123456789key",), "*** inside x***x"),
]

UNCHANGED = ["Token expired for user 3", "a plain message with http://ls.example:8080/api/projects?page=2",
             "Authorization required", "the basic rule", "bearer of news", "Basic information about bearer authentication", "authorization, cookies and keys", "http://ls/#top", "k-means"]


@pytest.mark.parametrize("text,secrets,want", MASKED, ids=[m[2][:40] for m in MASKED])
def test_only_the_secret_value_is_masked(text, secrets, want):
    assert mask_credentials(text, secrets) == want
    assert mask_credentials(want, secrets) == want  # masking twice changes nothing


@pytest.mark.parametrize("text", UNCHANGED)
def test_text_without_credentials_is_unchanged(text):
    assert mask_credentials(text) == text


def test_urls_lose_path_parameters_and_fragment_tokens_and_url_secrets_knows_them():
    url = "http://u:hunter2-pw@ls/app;jsessionid=SESS0123;v=2/x?token=TOK0123&page=2#access_token=FRAG0123"
    assert redact_url(url) == "http://ls/app;jsessionid=***;v=2/x?token=***&page=2#access_token=***"
    assert redact_url("http://ls/#eyJhbGciOiJIUzI1NiJ9abcdef") == "http://ls/#***"
    assert redact_url(redact_url("http://u:p/w@ls/")) == "http://***@ls/"
    found = url_secrets(url)
    for s in ("hunter2-pw", base64.b64encode(b"u:hunter2-pw").decode(), "SESS0123", "TOK0123", "FRAG0123"):
        assert s in found
    assert "2" not in found and "page" not in found
