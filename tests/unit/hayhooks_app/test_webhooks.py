"""Webhook checks without a server: GitHub's signature rule, the push path filter, and the JWT key choice."""

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from hayhooks_app.errors import ApiError
from hayhooks_app.webhooks import JwtVerifier, _pushed_paths, github_signature_valid

pytestmark = pytest.mark.unit


class TestGithubSignature:
    def test_valid_and_invalid(self):
        body = b'{"ref": "refs/heads/main"}'
        good = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        assert github_signature_valid("s3cret", body, good)
        assert not github_signature_valid("other", body, good)
        assert not github_signature_valid("s3cret", body + b" ", good)
        assert not github_signature_valid("s3cret", body, good.replace("sha256=", "sha1="))
        assert not github_signature_valid("s3cret", body, None)
        assert not github_signature_valid("s3cret", body, "sha256=" + "é" * 64)


class TestPushedPaths:
    def test_paths_of_every_listed_commit(self):
        payload = {"commits": [{"added": ["a.md"], "modified": ["b.md"]}, {"removed": ["c.md"]}]}
        assert _pushed_paths(payload) == {"a.md", "b.md", "c.md"}

    @pytest.mark.parametrize(
        "payload",
        [
            {"forced": True, "commits": [{"added": ["a.md"]}]},
            {"commits": [{"added": ["a.md"]}] * 20},  # GitHub lists at most 20: more may be hidden
            {"commits": []},
            {"commits": [{"added": "a.md"}]},
            {},
        ],
    )
    def test_unfilterable_pushes_are_not_filtered(self, payload):
        assert _pushed_paths(payload) is None


@pytest.fixture(scope="module")
def keys():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key, public.decode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TestJwtVerifier:
    def test_the_algorithm_picks_its_own_key(self, keys):
        private, public = keys
        claims = {"source": "h", "aud": "sourcebound", "exp": int(time.time()) + 60}
        verifier = JwtVerifier(None, public, "sourcebound")
        assert verifier.claims(jwt.encode(claims, private, algorithm="RS256"))["source"] == "h"
        # The classic confusion: an HS256 token whose HMAC key is the (public) RSA key. No HS256 secret is
        # configured, so the public key is never used as one.
        signing_input = _b64(b'{"alg":"HS256","typ":"JWT"}') + "." + _b64(json.dumps(claims).encode())
        mac = hmac.new(public.encode(), signing_input.encode(), hashlib.sha256).digest()
        forged = f"{signing_input}.{_b64(mac)}"
        with pytest.raises(ApiError) as raised:
            verifier.claims(forged)
        assert raised.value.status_code == 401 and "HS256" in str(raised.value.detail)

    def test_audience_expiry_and_not_before(self):
        verifier = JwtVerifier("a-secret-long-enough-for-hs256-use", None, "sourcebound")
        now = int(time.time())
        for claims in (
            {"aud": "other", "exp": now + 60},
            {"aud": "sourcebound", "exp": now - 120},
            {"aud": "sourcebound", "exp": now + 600, "nbf": now + 300},
            {"aud": "sourcebound"},
        ):
            with pytest.raises(ApiError) as raised:
                verifier.claims(jwt.encode({"source": "h", **claims}, "a-secret-long-enough-for-hs256-use", "HS256"))
            assert raised.value.status_code == 401
