"""The audit export streams asynchronously under ASGI, without Django's warning (issue 30 §14)."""

import json
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient
from django.urls import reverse

from memories.store.models import AuditEntry

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_the_export_under_asgi_streams_every_entry_without_a_warning(steward, world, fmt):
    client = AsyncClient()

    async def fetch() -> tuple[bool, bytes]:
        await client.aforce_login(steward)
        response = await client.get(reverse("audit-export", args=[fmt]))
        assert response.status_code == 200
        return response.is_async, b"".join([part async for part in response.streaming_content])

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*StreamingHttpResponse")
        # In a thread of its own: the browser tests' Playwright keeps an event
        # loop running in the main thread, where async_to_sync may not run.
        with ThreadPoolExecutor(max_workers=1) as pool:
            is_async, body = pool.submit(async_to_sync(fetch)).result()
    assert is_async
    lines = body.decode().splitlines()
    count = AuditEntry.objects.count()
    assert count and len(lines) == count + (fmt == "csv")
    if fmt == "jsonl":
        assert {json.loads(line)["id"] for line in lines} == set(
            AuditEntry.objects.values_list("id", flat=True)
        )
