"""What goes in and out of the API: JSON in UTF-8 in, JSON out.

The renderer is shared by every answer, error answers included
(``api.errors``), so all of them carry the same content type and encoding.
"""

import json
from typing import Any

from django.http import HttpRequest
from ninja.parser import Parser
from ninja.renderers import JSONRenderer

from api.schemas import AnswerEncoder


class Renderer(JSONRenderer):
    encoder_class = AnswerEncoder


RENDERER = Renderer()
CONTENT_TYPE = f"{RENDERER.media_type}; charset={RENDERER.charset}"


class UnsupportedBody(Exception):
    """A body declared as something other than JSON in UTF-8 (415)."""


class NotUtf8(Exception):
    """A JSON body whose bytes are not UTF-8 (400)."""


class JsonBodies(Parser):
    """A body is JSON in UTF-8, sent as ``application/json``; nothing else is guessed at.

    django-ninja's own parser hands the bytes to ``json.loads``, which reads
    a body whatever its Content-Type and detects UTF-16 and UTF-32 by
    itself, so a ``text/plain`` body or a UTF-16 one was taken as JSON.
    """

    def parse_body(self, request: HttpRequest) -> Any:
        charset = request.content_params.get("charset", "utf-8").lower()
        if request.content_type != "application/json" or charset not in ("utf-8", "utf8"):
            raise UnsupportedBody(request.META.get("CONTENT_TYPE", ""))
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotUtf8(str(exc)) from None
        return json.loads(text)
