"""The JSON API for agents, mounted at /api/v1/ (SPEC §10).

Each app owns its router (``memories.api``, ``admissions.api``); this module
only assembles them into one API with one OpenAPI document.
"""

from ninja import NinjaAPI

api = NinjaAPI(
    title="claimgraph",
    version="1",
    urls_namespace="api",
    openapi_url="/openapi.json",
    docs_url=None,
)
