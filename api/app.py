"""The JSON API for agents, mounted at /api/v1/ (SPEC §10): its assembly and mounting.

Each concern has its module and each app its router; this module puts them
together into one API with one OpenAPI document: the bearer token that
authenticates every operation (``api.auth``), JSON bodies in and out
(``api.bodies``), every refusal in the error shape (``api.errors``), and
the routers (``api.memory``, ``api.admissions``, ``api.agents``,
``api.changes``, ``api.health``, ``api.discovery``, ``api.search``), with a
last one that answers any other path under /api/v1/ in JSON too.
"""

from typing import Any

from django.http import HttpRequest
from django.urls import URLPattern, register_converter
from ninja import NinjaAPI, Router

from api import admissions as admissions_api
from api import agents as agents_api
from api import changes as changes_api
from api import discovery as discovery_api
from api import health as health_api
from api import memory as memories_api
from api import search as search_api
from api.auth import BearerToken
from api.bodies import RENDERER, JsonBodies
from api.errors import HANDLERS, json_not_allowed
from api.schemas import describe
from memories.store.errors import NotFound


class _Api(NinjaAPI):
    """django-ninja's API, whose 405s are in the API's error shape too.

    django-ninja answers a method that a path does not take from inside the
    path's view, outside any exception handler, so each view is wrapped
    where the URL patterns are made.
    """

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        # Every property described (issue 31 §2): the shared notes fill in
        # what a model leaves out (api.schemas.describe).
        return describe(super().get_openapi_schema(*args, **kwargs))

    @property
    def urls(self) -> tuple[list, str, str]:
        patterns, app_name, namespace = super().urls
        for pattern in patterns:
            if isinstance(pattern, URLPattern):
                pattern.callback = json_not_allowed(pattern.callback)
        return patterns, app_name, namespace


api = _Api(
    title="claimgraph",
    version="1",
    description=(
        "A shared memory for AI agents. Authenticate with `Authorization: Bearer <token>` "
        "(issued on the account page or by `manage.py issue_token`). Errors are "
        '`{"code", "message", "field"?}`, or with several bad fields `{"code": "invalid",'
        ' "message", "errors": [{"field", "code", "message"}, ...]}`. Start with GET /scopes'
        " and GET /vocabulary: every scope, predicate and source type you may use."
    ),
    urls_namespace="api",
    openapi_url="/openapi.json",
    docs_url=None,
    auth=BearerToken(),
    renderer=RENDERER,
    parser=JsonBodies(),
)

for _exception, _handler in HANDLERS.items():
    api.add_exception_handler(_exception, _handler)

api.add_router("", memories_api.router)
api.add_router("", admissions_api.router)
api.add_router("", agents_api.router)
api.add_router("", changes_api.router)
api.add_router("", health_api.router)
api.add_router("", discovery_api.router)
api.add_router("", search_api.router)


class _AnyPath:
    """Whatever follows /api/v1/: nothing at all, line breaks included."""

    # Django's "path" converter needs a character and stops at a line
    # break; what it missed would fall through to Django's HTML 404.
    regex = r"[\s\S]*"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(_AnyPath, "anypath")

# Mounted last, so it only sees what no operation above matched.
fallback = Router()


@fallback.api_operation(
    ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"],
    "/{anypath:rest}",
    auth=None,
    include_in_schema=False,
)
def no_such_operation(request: HttpRequest, rest: str):
    """Anything under /api/v1/ that is no operation answers in JSON too, never an HTML page."""
    raise NotFound("operation")


api.add_router("", fallback)
