"""``manage.py mcp --user USERNAME``: the MCP tools over stdio, acting as one account."""

import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from api.mcp.server import Caller, build_server
from api.mcp.wire import answering_stdio
from memories.store.errors import Forbidden


def stdio_caller(user_id: int):
    """The account, read again on each call: a deactivated one stops at once.

    No token, so no write limit: whoever can run this command on the server
    can reach its database anyway.
    """

    def caller_of(request: object) -> Caller:
        user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
        if user is None:
            raise Forbidden("the account this server acts as is no longer active")
        return Caller(user=user, token=None)

    return caller_of


class Command(BaseCommand):
    help = (
        "Serve the memory as MCP tools on standard input and output, acting as USERNAME "
        "(for an agent on this machine; see docs/agents.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="The account the agent acts as.")

    def handle(self, *args, user: str, **options) -> None:
        account = get_user_model().objects.filter(username=user).first()
        if account is None or not account.is_active:
            raise CommandError(f"no active account named {user!r}")
        server = build_server(stdio_caller(account.pk))
        # The tools query from Django's sync thread, not this one.
        connections.close_all()
        anyio.run(self._serve, server)

    async def _serve(self, server) -> None:
        # The SDK's run_stdio_async, with a reply to every line it cannot read.
        lowlevel = server._lowlevel_server
        async with answering_stdio() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
