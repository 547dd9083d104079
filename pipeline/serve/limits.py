"""What a request must pass before the app reads it: the bearer token (`--api-key`) and the body's size
(`--max-request-bytes`). Both are plain ASGI middleware, so they refuse a request before its body is read.

Refusals are JSON, one line naming what to fix: {"error": "..."}, as every other error of the server.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNAUTHORIZED, TOO_LARGE = 401, 413
# Paths answered without a token: probes of orchestrators and load balancers rarely carry one.
OPEN_PATHS = ("/health",)


async def send_error(send: Send, status: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"error": message}).encode()
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class BearerToken:
    """Every path but OPEN_PATHS needs `Authorization: Bearer <api key>`."""

    def __init__(self, app: ASGIApp, api_key: str | None):
        self.app = app
        self.api_key = api_key.encode() if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.api_key is None or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        scheme, _, token = (header(scope, b"authorization") or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            message = "Authorization: this server needs a bearer token (Authorization: Bearer <key>)"
        elif not hmac.compare_digest(token.strip().encode(), self.api_key):  # same time whatever the token
            message = "Authorization: the bearer token is not this server's key"
        else:
            await self.app(scope, receive, send)
            return
        await send_error(send, UNAUTHORIZED, message, [(b"www-authenticate", b"Bearer")])


class BodyTooLarge(HTTPException):
    """A body that grew past the limit while being read (one sent without Content-Length)."""

    def __init__(self, limit: int):
        super().__init__(TOO_LARGE, too_large_message(limit))


def too_large_message(limit: int) -> str:
    return f"body: over the server's limit of {limit} bytes (--max-request-bytes)"


class BodyLimit:
    """Refuse a body over `limit` bytes: at once when Content-Length says so, else as soon as it grows past it."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = header(scope, b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.limit:
            await send_error(send, TOO_LARGE, too_large_message(self.limit))
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise BodyTooLarge(self.limit)  # the app's HTTPException handler answers it
            return message

        await self.app(scope, counted, send)
