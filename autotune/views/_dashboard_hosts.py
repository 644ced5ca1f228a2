"""Who may ask the dashboard: the Host-header check against DNS rebinding, and the warning
printed when it listens beyond this machine (the dashboard has no login)."""

from __future__ import annotations

import ipaddress
import re
import socket
import urllib.parse
from collections.abc import Iterable
from typing import Any

#: The names of this machine every dashboard answers to, whatever it listens on.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: Listening on these means every address of this machine.
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})
#: The answer (400) to a request whose Host header names another site.
HOST_REFUSED = "autotune dashboard: the Host header names another site; open this machine's.\n"


def _plain_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` keeps the dashboard on this machine: "localhost", or an
    address (or a name that resolves only to addresses) of the loopback interface."""
    plain = _plain_host(host)
    if plain in WILDCARD_HOSTS or plain == "localhost":
        return plain == "localhost"
    try:  # an address resolves to itself, without asking DNS
        infos = socket.getaddrinfo(plain, None)
    except OSError:
        return False
    return bool(infos) and all(
        ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos
    )


def _machine_names() -> set[str]:
    """This machine's host names and the addresses of its interfaces."""
    import psutil

    names = {socket.gethostname(), socket.getfqdn()}
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family in (socket.AF_INET, socket.AF_INET6):
                names.add(str(address.address).split("%")[0])
    return {_plain_host(n) for n in names if n}


def allowed_hosts(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names (lower case, no port, IPv6 without brackets) a request's Host header may
    name when the dashboard listens on ``host``: the loopback names, ``host`` itself, and for a
    wildcard ``host`` ("0.0.0.0", "::") this machine's names and interface addresses; plus
    ``extra`` (say, a name other machines reach this one by)."""
    names = set(LOOPBACK_NAMES) | {_plain_host(n) for n in extra}
    plain = _plain_host(host)
    if plain in WILDCARD_HOSTS:
        names |= _machine_names()
    else:
        names.add(plain)
    return frozenset(names)


def split_host_header(value: str) -> tuple[str, int | None]:
    """(host name, port) of a Host header: "[::1]:8050" -> ("::1", 8050), "Example." ->
    ("example", None). ValueError for a bad port or a character no host name holds."""
    if not value.strip() or re.search(r"[@/?#\\\s]", value.strip()):
        raise ValueError(f"not a Host header: {value!r}")
    parts = urllib.parse.urlsplit("//" + value.strip())
    return _plain_host(parts.hostname or ""), parts.port


def host_allowed(value: str | None, names: frozenset[str], port: int | None) -> bool:
    """Whether Host header ``value`` names one of ``names`` (and ``port``, when given; a
    header without a port means port 80)."""
    try:
        name, asked = split_host_header(value or "")
    except ValueError:
        return False
    return name in names and (port is None or (asked or 80) == port)


def exposure_warning(host: str, port: int) -> str | None:
    """A warning to print when listening on ``host`` puts the dashboard beyond this machine;
    None for a loopback address."""
    if is_loopback(host):
        return None
    where = "every address of this machine" if _plain_host(host) in WILDCARD_HOSTS else host
    return (
        f"WARNING: the dashboard listens on {where} (port {port}), beyond this machine: anyone "
        "who can reach that port sees the whole study (names, configurations, log folders); "
        "there is no login. Requests whose Host header is not this machine's name or address "
        "get 400. Use --host 127.0.0.1 unless the network is trusted."
    )


def guard_host(server: Any, names: frozenset[str], port: int | None) -> None:
    """Makes the Flask ``server`` answer 400 to a request whose Host header is not allowed."""
    from flask import request

    def check_host() -> Any:
        if host_allowed(request.headers.get("Host"), names, port):
            return None
        return HOST_REFUSED, 400, {"Content-Type": "text/plain; charset=utf-8"}

    server.before_request(check_host)


__all__ = [
    "HOST_REFUSED",
    "LOOPBACK_NAMES",
    "WILDCARD_HOSTS",
    "allowed_hosts",
    "exposure_warning",
    "guard_host",
    "host_allowed",
    "is_loopback",
    "split_host_header",
]
