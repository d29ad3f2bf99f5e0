"""The network, asked the least: whether a host can be reached at all before a library retries it."""
from __future__ import annotations

import os
import socket
import urllib.parse


def unresolvable(endpoint: str) -> str | None:
    """Why the host of `endpoint` (a URL) cannot be reached, found without connecting (its name does not
    resolve), or None; None behind a proxy too, which resolves names itself."""
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")):
        return None
    host = urllib.parse.urlparse(endpoint).hostname
    if not host:
        return None
    try:
        socket.getaddrinfo(host, 443)
    except OSError as exc:
        return f"{host} does not resolve: {exc.strerror or type(exc).__name__}"
    return None
