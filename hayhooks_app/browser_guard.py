"""
No other web site can drive the server (docs/contract.md, "Identity and delegation"; docs/operations.md,
"Hosts and browsers").

* **Host allowlist.** A request whose ``Host`` is not a loopback name (``localhost``, ``*.localhost``,
  ``127.0.0.0/8``, ``::1``), the bind address (``HAYHOOKS_HOST``, unless a wildcard) or a name in
  ``SOURCEBOUND_ALLOWED_HOSTS`` is refused with 403 before anything runs: a DNS-rebinding page (its own name
  pointed at this server) reaches no route, ``/mcp`` included. ``SOURCEBOUND_ALLOWED_HOSTS=*`` turns the check
  off, for a gateway that enforces its own. An entry may be an address range (``172.30.86.0/24``): it admits
  only ``Host`` values that are literal addresses in it (a scraper reaching each replica by its address), never a
  name, so it admits no rebinding page (whose ``Host`` is its own name).
* **Cross-site writes.** A state-changing request (``POST``, ``PUT``, ``PATCH``, ``DELETE``) that carries an
  ``Origin`` whose host is not allowed (``null`` included) or ``Sec-Fetch-Site: cross-site`` is refused with
  403, so a page elsewhere cannot submit a form (``multipart/form-data`` needs no CORS preflight) to
  ``/index/upload`` or any other route. Requests without ``Origin`` (curl, SDKs, servers) pass.
* **MCP transports** get the same lists as their own DNS-rebinding protection (:meth:`AllowedHosts.mcp_security`).

Usage:

```python
from hayhooks_app.browser_guard import AllowedHosts, BrowserGuard

hosts = AllowedHosts.from_setting("rag.example.com", bind_host="0.0.0.0")
app.add_middleware(BrowserGuard, hosts=hosts)     # outermost: before size limits and routes
```
"""

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from hayhooks_app.errors import error_response

ALLOWED_HOSTS_ENV = "SOURCEBOUND_ALLOWED_HOSTS"
STATE_CHANGING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_WILDCARD_BIND = frozenset({"", "0.0.0.0", "::", "[::]"})


def host_name(authority: str) -> str | None:
    """The lower-case host name of a ``Host`` header or URL authority (port and IPv6 brackets removed)."""
    authority = authority.strip().lower()
    if not authority or any(char in authority for char in "/@ \t\\*"):
        return None
    if authority.startswith("["):
        end = authority.find("]")
        rest = authority[end + 1 :] if end >= 0 else ""
        if end < 0 or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return authority[1:end] or None
    if authority.count(":") > 1:  # a bare IPv6 literal (a setting, not a Host header)
        return authority
    name, _, port = authority.partition(":")
    if port and not port.isdigit():
        return None
    return name.rstrip(".") or None


def _is_loopback(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class AllowedHosts:
    """
    The host names this server answers to.

    :param names: Configured names (lower case); loopback names are always allowed.
    :param any_host: ``*`` was configured: every host is allowed (the gateway checks).
    :param networks: Configured address ranges: a ``Host`` that is a literal address in one is allowed.
    """

    names: frozenset[str] = frozenset()
    any_host: bool = False
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def from_setting(cls, value: str | None, bind_host: str | None = None) -> "AllowedHosts":
        """
        Parse ``SOURCEBOUND_ALLOWED_HOSTS`` (comma-separated host names or address ranges; ``*`` for any) plus
        the bind address.

        :raises ValueError: On an entry that is not a host name or an address range (a URL, a path, a port alone).
        """
        names: set[str] = set()
        networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        any_host = False
        for entry in (value or "").split(","):
            entry = entry.strip()
            if not entry:
                continue
            if entry == "*":
                any_host = True
                continue
            network = _network(entry)
            if network is not None:
                networks.append(network)
                continue
            name = host_name(entry)
            if name is None:
                raise ValueError(
                    f"{ALLOWED_HOSTS_ENV}: {entry!r} is not a host name; list names such as rag.example.com, "
                    "addresses such as 10.0.0.5 or ranges such as 10.0.0.0/24, separated by commas (or * alone "
                    "for any host)."
                )
            names.add(name)
        bind = (bind_host or "").strip().lower()
        if bind not in _WILDCARD_BIND:
            names.add(host_name(bind) or bind)
        return cls(frozenset(names), any_host, tuple(networks))

    def allows(self, name: str | None) -> bool:
        """Whether a request for host ``name`` (from :func:`host_name`) is served."""
        if self.any_host:
            return True
        if not name:
            return False
        return _is_loopback(name) or name in self.names or self._in_networks(name)

    def _in_networks(self, name: str) -> bool:
        if not self.networks:
            return False
        try:
            address = ipaddress.ip_address(name)
        except ValueError:  # a name: ranges admit literal addresses only
            return False
        return any(address in network for network in self.networks)

    def allows_origin(self, origin: str) -> bool:
        """Whether a browser page of ``origin`` (``scheme://host[:port]``) may change state here."""
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # "null" (sandboxed frames, files) and anything odd
        return self.allows(host_name(parts.netloc))

    def mcp_security(self):
        """
        The MCP transports' own DNS-rebinding protection over the same names (``mcp`` transport security). Address
        ranges are not passed on (it takes exact hosts): a range is for scrapers of ``/metrics``, not MCP clients.
        """
        from mcp.server.transport_security import TransportSecuritySettings

        if self.any_host:
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        names = dict.fromkeys(_bracketed(name) for name in ("localhost", "127.0.0.1", "::1", *sorted(self.names)))
        hosts = [form for name in names for form in (name, f"{name}:*")]
        origins = [f"{scheme}://{host}" for scheme in ("http", "https") for host in hosts]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        )


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """An address range entry (``10.0.0.0/24``, ``fd00::/64``), or ``None`` for anything else."""
    if "/" not in entry:
        return None
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return value.decode("latin-1")
    return None


class BrowserGuard:
    """
    Refuses foreign hosts and cross-site state changes before anything else runs (see the module docstring).

    :param app: The wrapped ASGI app.
    :param hosts: The allowed hosts.
    """

    def __init__(self, app: ASGIApp, hosts: AllowedHosts):
        self.app = app
        self.hosts = hosts

    def refusal(self, scope: Scope) -> str | None:
        """Why this request is refused, or ``None``."""
        host = _header(scope, b"host")
        if not self.hosts.allows(host_name(host or "")):
            return (
                f"Host {host!r} is not served here: this server answers to loopback names, its bind address and "
                f"the names in {ALLOWED_HOSTS_ENV}; add the name you reach it by there."
            )
        if scope["type"] != "http" or scope["method"] not in STATE_CHANGING_METHODS:
            return None
        origin = _header(scope, b"origin")
        if origin is not None and not self.hosts.allows_origin(origin):
            return (
                f"Cross-site request refused: a page of origin {origin!r} may not change anything here. Pages "
                f"served from a host in {ALLOWED_HOSTS_ENV} (or a loopback name) may."
            )
        if (_header(scope, b"sec-fetch-site") or "").strip().lower() == "cross-site":
            return (
                "Cross-site request refused (Sec-Fetch-Site: cross-site): a page of another site may not change "
                f"anything here. Serve the page from a host in {ALLOWED_HOSTS_ENV}, or call the API from a server."
            )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            problem = self.refusal(scope)
            if problem is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await error_response(403, "forbidden", problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)
