"""
A small OpenID Connect provider for the tests, on 127.0.0.1 (docs/testing.md): discovery, JWKS, the
authorization endpoint (code flow with PKCE, S256 only), the token endpoint (authorization code and refresh
token grants) and end-session. Tokens are signed with joserfc, the library the server verifies them with.

There is no login form: ``/authorize`` signs in ``provider.login_as`` at once, as a provider with a live
session would. Users' claims live in ``provider.users`` and are read when a token is issued, so removing a
group there is what a leaver looks like to the server's next token.

Usage:

```python
with OidcProvider(audience="sourcebound") as provider:
    provider.users["alice"] = {"groups": ["hr"], "tid": "acme"}
    token = provider.token("alice")                      # an access token for the API
    expired = provider.token("alice", exp_in=-120)        # variants for the refusal tests
```
"""

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwk, jwt


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_challenge(verifier: str) -> str:
    """RFC 7636, section 4.2: S256."""
    return _b64(hashlib.sha256(verifier.encode("ascii")).digest())


class OidcProvider:
    """
    :param audience: ``aud`` of the access tokens it issues (the API's audience).
    :param client_id: The web page's public client (``aud`` of its ID tokens).
    :param token_lifetime_s: Lifetime of issued tokens.
    """

    def __init__(self, audience: str = "sourcebound", client_id: str = "sourcebound-web", token_lifetime_s: int = 300):
        self.audience = audience
        self.client_id = client_id
        self.token_lifetime_s = token_lifetime_s
        self.keys: list[jwk.RSAKey] = []
        self.rotate()
        self.users: dict[str, dict[str, Any]] = {}
        self.login_as: str | None = None
        self.hits: dict[str, int] = {}
        self.grants: list[str] = []  # grant_type of every token request, in order
        self.logouts: list[dict[str, str]] = []
        self._codes: dict[str, dict[str, Any]] = {}
        self._refresh: dict[str, str] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ keys and tokens

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def signing_key(self) -> jwk.RSAKey:
        return self.keys[-1]

    def rotate(self, keep_old: bool = True) -> jwk.RSAKey:
        """Publish a new signing key and sign with it; ``keep_old=False`` withdraws the previous ones."""
        key = jwk.RSAKey.generate_key(2048, parameters={"kid": f"k-{secrets.token_hex(4)}", "use": "sig"})
        self.keys = [*self.keys, key] if keep_old else [key]
        return key

    def jwks(self) -> dict[str, Any]:
        return jwk.KeySet(list(self.keys)).as_dict(private=False)

    def claims(self, user: str, audience: str | None = None, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": user,
            "aud": audience or self.audience,
            "iat": now,
            "nbf": now,
            "exp": now + self.token_lifetime_s,
            **self.users.get(user, {}),
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def token(
        self,
        user: str,
        *,
        exp_in: int | None = None,
        key: jwk.Key | None = None,
        header: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A signed token for ``user`` (claim overrides as keywords; ``None`` drops a claim)."""
        if exp_in is not None:
            claims["exp"] = int(time.time()) + exp_in
        signer = key or self.signing_key
        protected = {"alg": "RS256", "kid": signer.kid, "typ": "JWT", **(header or {})}
        return jwt.encode(protected, self.claims(user, **claims), signer)

    def revoke_refresh_tokens(self) -> None:
        """What an administrator's "sign out everywhere" does: every refresh token stops working."""
        with self._lock:
            self._refresh.clear()

    # ------------------------------------------------------------------ the flow

    def _authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        problems = []
        if query.get("client_id") != self.client_id:
            problems.append("unknown client_id")
        if query.get("response_type") != "code":
            problems.append("response_type must be code")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            problems.append("PKCE with S256 is required")
        if "openid" not in query.get("scope", "").split():
            problems.append("scope must include openid")
        redirect = query.get("redirect_uri", "")
        if urlsplit(redirect).hostname != "127.0.0.1":
            problems.append("redirect_uri must be on 127.0.0.1")
        if problems or self.login_as is None:
            return 400, {"Content-Type": "text/plain"}, ("; ".join(problems) or "nobody to sign in").encode()
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes[code] = {
                "user": self.login_as,
                "challenge": query["code_challenge"],
                "redirect_uri": redirect,
                "nonce": query.get("nonce"),
                "expires": time.time() + 60,
            }
        location = (
            f"{redirect}{'&' if '?' in redirect else '?'}{urlencode({'code': code, 'state': query.get('state', '')})}"
        )
        return 302, {"Location": location}, b""

    def _issue(self, user: str, nonce: str | None) -> dict[str, Any]:
        refresh = secrets.token_urlsafe(24)
        with self._lock:
            self._refresh[refresh] = user
        id_claims = {"nonce": nonce} if nonce else {}
        return {
            "token_type": "Bearer",
            "access_token": self.token(user),
            "id_token": self.token(user, audience=self.client_id, **id_claims),
            "refresh_token": refresh,
            "expires_in": self.token_lifetime_s,
        }

    def _token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        grant = form.get("grant_type", "")
        self.grants.append(grant)
        if form.get("client_id") != self.client_id:
            return 401, {"error": "invalid_client"}
        if grant == "authorization_code":
            with self._lock:
                entry = self._codes.pop(form.get("code", ""), None)  # single use
            if entry is None or entry["expires"] < time.time():
                return 400, {"error": "invalid_grant", "error_description": "unknown or used code"}
            if form.get("redirect_uri") != entry["redirect_uri"]:
                return 400, {"error": "invalid_grant", "error_description": "redirect_uri differs"}
            if pkce_challenge(form.get("code_verifier", "")) != entry["challenge"]:
                return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
            return 200, self._issue(entry["user"], entry["nonce"])
        if grant == "refresh_token":
            with self._lock:
                user = self._refresh.pop(form.get("refresh_token", ""), None)  # rotated on use
            if user is None or user not in self.users:
                return 400, {"error": "invalid_grant", "error_description": "refresh token revoked"}
            return 200, self._issue(user, None)
        return 400, {"error": "unsupported_grant_type"}

    # ------------------------------------------------------------------ HTTP

    def _handler(self):
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                origin = self.headers.get("Origin")
                if origin:  # the page calls the token endpoint from its own origin
                    self.send_header("Access-Control-Allow-Origin", origin)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, data: Any) -> None:
                self._send(status, json.dumps(data).encode(), {"Content-Type": "application/json"})

            def do_GET(self):
                parts = urlsplit(self.path)
                provider.hits[parts.path] = provider.hits.get(parts.path, 0) + 1
                query = {name: values[0] for name, values in parse_qs(parts.query).items()}
                if parts.path == "/.well-known/openid-configuration":
                    base = provider.issuer
                    self._json(
                        200,
                        {
                            "issuer": base,
                            "jwks_uri": f"{base}/jwks",
                            "authorization_endpoint": f"{base}/authorize",
                            "token_endpoint": f"{base}/token",
                            "end_session_endpoint": f"{base}/logout",
                            "response_types_supported": ["code"],
                            "code_challenge_methods_supported": ["S256"],
                            "id_token_signing_alg_values_supported": ["RS256"],
                            "subject_types_supported": ["public"],
                        },
                    )
                elif parts.path == "/jwks":
                    self._json(200, provider.jwks())
                elif parts.path == "/authorize":
                    status, headers, body = provider._authorize(query)
                    self._send(status, body, headers)
                elif parts.path == "/logout":
                    provider.logouts.append(query)
                    target = query.get("post_logout_redirect_uri") or provider.issuer
                    self._send(302, b"", {"Location": target})
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self):
                parts = urlsplit(self.path)
                provider.hits[parts.path] = provider.hits.get(parts.path, 0) + 1
                length = int(self.headers.get("Content-Length") or 0)
                form = {name: values[0] for name, values in parse_qs(self.rfile.read(length).decode()).items()}
                if parts.path == "/token":
                    self._json(*provider._token(form))
                else:
                    self._json(404, {"error": "not_found"})

        return Handler

    def start(self) -> "OidcProvider":
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "OidcProvider":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
