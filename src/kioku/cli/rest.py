"""The quick commands' REST calls (``recall``, ``pinned``, ``state get|set`` with ``--url``),
without the SDK.

These commands run on every prompt of an agent harness, where start-up time is the cost:
importing the SDK (httpx, and pydantic for the wire models) takes longer than the whole
command may. So they speak to the server with the standard library's ``http.client`` and
read its JSON as plain data, as the SDK would have sent and read it: the same paths, body and
query parameters, ``KIOKU_API_KEY`` as a bearer token, the same error classes from the
server's error shape (``kioku.errors.error_from_answer``), the same one line when the server
cannot be reached. Every other command goes through the SDK.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import SplitResult, quote, urlencode, urlsplit

from kioku._version import __version__
from kioku.errors import error_from_answer
from kioku.settings import client as client_settings

TIMEOUT = 30.0
"""Seconds to wait for the server, as the SDK's default."""


class Unreachable(Exception):
    """No answer from the server (refused, timed out, not an http(s) URL); the reason."""


def path(*segments: str) -> str:
    """``/api/v1/<segments>``, each segment percent-encoded (as the SDK's ``path``)."""
    return "/api/v1/" + "/".join(quote(segment, safe="") for segment in segments)


def request(
    url: str,
    method: str,
    route: str,
    *,
    params: dict[str, Any] | None = None,
    body: Any = None,
    timeout: float = TIMEOUT,
) -> Any:
    """One request to the kioku server at ``url``; the decoded JSON of a successful answer.

    An error answer raises its ``KiokuError`` subclass (``NotFoundError``, ...); no answer
    raises ``Unreachable``."""
    base = urlsplit(url)
    if base.scheme not in ("http", "https") or not base.hostname:
        raise Unreachable(f"InvalidURL: {url!r} is not an http(s) URL")
    query = urlencode({k: v for k, v in (params or {}).items() if v is not None}, doseq=True)
    target = base.path.rstrip("/") + route + (f"?{query}" if query else "")
    headers = {"User-Agent": f"kioku-python/{__version__}", "Accept": "application/json"}
    key = client_settings.api_key()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    content = None
    if body is not None:
        content = _json_bytes(body)
        headers["Content-Type"] = "application/json"
    send = _send_via_proxy if _proxy_configured(base.scheme) else _send
    status, reason, data = send(base, method, target, content, headers, timeout)
    if not 200 <= status < 300:
        raise error_from_answer(status, reason, data)
    return json.loads(data) if data else None


Answer = tuple[int, str, bytes]


def _send(
    base: SplitResult, method: str, target: str, content: bytes | None,
    headers: dict[str, str], timeout: float,
) -> Answer:  # fmt: skip
    """Straight to the server, with ``http.client`` (a third of urllib.request's import).
    A failure is named as httpx names it behind the SDK (``ConnectError``, ``ReadTimeout``)."""
    import http.client

    kind = http.client.HTTPSConnection if base.scheme == "https" else http.client.HTTPConnection
    try:
        connection = kind(base.hostname or "", base.port, timeout=timeout)
    except ValueError as exc:  # a port that is not a number
        raise Unreachable(_reason("InvalidURL", exc)) from None
    try:
        try:
            connection.connect()
        except TimeoutError as exc:
            raise Unreachable(_reason("ConnectTimeout", exc)) from None
        except OSError as exc:
            raise Unreachable(_reason("ConnectError", exc)) from None
        try:
            connection.request(method, target, body=content, headers=headers)
            answer = connection.getresponse()
            return answer.status, answer.reason, answer.read()
        except TimeoutError as exc:
            raise Unreachable(_reason("ReadTimeout", exc)) from None
        except (OSError, http.client.HTTPException) as exc:
            raise Unreachable(_reason("ReadError", exc)) from None
    finally:
        connection.close()


def _reason(kind: str, exc: object) -> str:
    return f"{kind}: {exc}" if str(exc) else kind


def _proxy_configured(scheme: str) -> bool:
    """Whether the environment names a proxy for ``scheme`` (httpx, behind the SDK, uses it)."""
    names = (f"{scheme}_proxy", "all_proxy")
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in names)


def _send_via_proxy(
    base: SplitResult, method: str, target: str, content: bytes | None,
    headers: dict[str, str], timeout: float,
) -> Answer:  # fmt: skip
    """Through the proxy of ``*_proxy`` / ``NO_PROXY``, as urllib reads them; no redirects
    followed (as the SDK)."""
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    full = f"{base.scheme}://{base.netloc}{target}"
    request = urllib.request.Request(full, data=content, headers=headers, method=method)
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as answer:
            return answer.status, answer.reason, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, str(exc.reason), exc.read()
    except urllib.error.URLError as exc:
        raise Unreachable(_reason("ConnectError", exc.reason)) from None
    except (OSError, ValueError) as exc:
        raise Unreachable(_reason(type(exc).__name__, exc)) from None


def _json_bytes(body: Any) -> bytes:
    """Compact UTF-8 JSON; text holding a lone surrogate (which UTF-8 cannot carry) is sent
    ``\\u``-escaped, so that the server refuses it naming the field (as the SDK does)."""
    try:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
