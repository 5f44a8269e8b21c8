"""One HTTP attempt of a delivery, and what its answer means for a retry.

The request goes to the address ``addresses.target_of`` checked, never to a
second lookup of the host: the URL's host is replaced by that address, the
``Host`` header names the host as written, and for https the TLS server
name (SNI) and the certificate check use the host too (httpx's
``sni_hostname`` extension), so TLS is verified exactly as for the URL
itself. No proxy from the environment (``trust_env=False``: a proxy would
resolve the host again), no redirects followed (a 3xx is a failure, logged
with where it pointed), and one short timeout for connecting, sending and
reading.
"""

import time
from collections.abc import Iterable
from dataclasses import dataclass

import httpx2

from notifications.webhook.addresses import Refused, Resolver, Unresolvable, target_of

# How much of an answer the delivery log keeps.
RESPONSE_HEAD_BYTES = 200
USER_AGENT = "claimgraph-webhooks/1"


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to: a status, or the error that stood in for one."""

    status_code: int | None = None
    error: str = ""
    latency_ms: int | None = None
    response_head: str = ""
    retryable: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def retryable_status(status_code: int) -> bool:
    """Whether an answer with this status is worth another try. Pure.

    Server errors (5xx), 408 Request Timeout and 429 Too Many Requests may
    pass; any other 4xx says the request itself is refused, and a 3xx is a
    redirect a delivery never follows: trying again would get the same.
    """
    return status_code >= 500 or status_code in (408, 429)


def send(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout: float,
    allowed_hosts: Iterable[str],
    resolver: Resolver | None = None,
) -> Outcome:
    """POST ``body`` with ``headers`` to ``url``, guarded; never raises for the network's sake."""
    try:
        target = target_of(url, allowed_hosts=allowed_hosts, resolver=resolver)
    except Refused as refused:
        return Outcome(error=str(refused)[:300])
    except Unresolvable as unresolvable:
        return Outcome(error=str(unresolvable)[:300], retryable=True)
    pinned = httpx2.URL(url).copy_with(host=target.address)
    default_port = 443 if target.scheme == "https" else 80
    host_header = target.host if target.port == default_port else f"{target.host}:{target.port}"
    if ":" in target.host and target.port != default_port:  # an IPv6 literal
        host_header = f"[{target.host}]:{target.port}"
    request_headers = {
        **headers,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "host": host_header,
    }
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    started = time.monotonic()
    try:
        with (
            httpx2.Client(trust_env=False, follow_redirects=False, timeout=timeout) as client,
            client.stream(
                "POST", pinned, content=body, headers=request_headers, extensions=extensions
            ) as response,
        ):
            head = _first_bytes(response)
            latency = _since(started)
    except httpx2.TimeoutException:
        return Outcome(
            error=f"timed out after {timeout:g} s", latency_ms=_since(started), retryable=True
        )
    except httpx2.TransportError as error:
        return Outcome(
            error=f"connection failed: {error or type(error).__name__}"[:300],
            latency_ms=_since(started),
            retryable=True,
        )
    status = response.status_code
    shown = head.decode("utf-8", "replace")[:RESPONSE_HEAD_BYTES]
    if 300 <= status < 400:
        location = response.headers.get("location", "")
        return Outcome(
            status_code=status,
            error=f"redirect to {location or 'nowhere'} not followed"[:300],
            latency_ms=latency,
            response_head=shown,
        )
    return Outcome(
        status_code=status,
        latency_ms=latency,
        response_head=shown,
        retryable=retryable_status(status),
    )


def _first_bytes(response: httpx2.Response) -> bytes:
    # Read no more than the log keeps: an endpoint answering with a large
    # (or endless) body must not hold the worker.
    head = b""
    for chunk in response.iter_bytes():
        head += chunk
        if len(head) >= RESPONSE_HEAD_BYTES:
            break
    return head[:RESPONSE_HEAD_BYTES]


def _since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
