"""The MCP tools (SPEC §10): the JSON API's operations, as tools an agent calls.

Each tool is one JSON API operation with its path parameter folded into its
arguments. Nothing is written twice: a tool's input schema *is* the JSON
API's body or query schema (``api.schemas``, ``api.admissions``,
``api.agents``) and validates the arguments; the tool calls the same action
or selector and the same presenter; its structured content is the JSON
API's answer body, its output schema the JSON API's response model. A
refusal of any kind is rendered by the JSON API's own exception handlers
(``api.app``) into its ``{code, message, field}`` body and answered as an
MCP tool error (``isError``), so bad input never breaks a session.

Who calls is decided by the transport: over HTTP the bearer token the
request carried (``api.mcp.http``), which also pays for each write as the
JSON API charges it; over stdio the account named on the command line.
ORM work runs in Django's thread for sync code (``sync_to_async`` with
``thread_sensitive=True``), with connections kept or closed as Django does
around a request.
"""

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http import HttpRequest
from django.utils import timezone
from mcp.server import MCPServer
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from ninja.errors import ValidationError as InvalidInput
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accounts.models import ApiToken
from accounts.tokens import spend_write
from admissions.selectors import shown_fact
from api.admissions import ChallengeIn, ChallengeOut, challenge_answer
from api.agents import (
    ContextOut,
    ContextQuery,
    SlotHistoryPage,
    SlotHistoryQuery,
    context_answer,
    history_answer,
)
from api.app import api
from api.discovery import (
    ScopePage,
    ScopesQuery,
    VocabularyOut,
    VocabularyQuery,
    scopes_answer,
    vocabulary_answer,
)
from api.mcp.guide import INSTRUCTIONS
from api.memory import (
    conflicts_answer,
    present_assert,
    present_invalidation,
    present_outcome,
    present_shown_fact,
    truth_answer,
)
from api.schemas import (
    AnswerEncoder,
    AssertOut,
    AtQuery,
    ConflictPage,
    ConflictQuery,
    FactIn,
    FactOut,
    InvalidateIn,
    InvalidateOut,
    OutcomeIn,
    OutcomeOut,
    QueryParameters,
    Text,
    TruthOut,
    TruthQuery,
    describe,
)
from api.search import SearchOut, SearchParameters, search_answer
from memories.write.actions import assert_fact, invalidate_fact, record_outcome

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caller:
    """Who a tool acts as: an account, and the token it came with (None over stdio)."""

    user: Any
    token: ApiToken | None


# Finds the caller of one call from the transport's request (None over
# stdio). Runs in Django's sync thread, so it may query.
CallerOf = Callable[[Any], Caller]


# --- arguments: the JSON API's schemas, with the path's fact id ------------------------

FACT_ID = Field(max_length=100, description="The fact's id, as answered by assert_fact or recall.")


class FactAt(AtQuery):
    fact_id: Text = FACT_ID


class ChallengeArguments(ChallengeIn):
    fact_id: Text = FACT_ID


class InvalidateArguments(InvalidateIn):
    fact_id: Text = FACT_ID


class AssertAnswer(AssertOut):
    instruction: str | None = Field(
        description=(
            "For a flagged answer: what to do with its candidates; for a name resolved by its"
            " look (look_alikes): which entity the fact is about."
        )
    )


# --- the operations --------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    name: str
    title: str
    description: str
    arguments: type[BaseModel]
    answer: type[BaseModel]
    # (actor, validated arguments) -> the JSON API's answer body
    run: Callable[[Any, Any], dict[str, Any]]
    writes: bool = False
    destructive: bool = False
    idempotent: bool = True


def _assert(actor, arguments: FactIn) -> dict[str, Any]:
    body = present_assert(
        assert_fact(actor=actor, data=arguments.model_dump(exclude_unset=True))
    ).value
    instruction = None
    if body["status"] == "flagged":
        instruction = (
            f"Flagged ({body['reason']}): your fact is stored as disputed and collides with"
            f" {len(body['candidates'])} standing fact(s), listed in candidates. Show the"
            " candidates to a human side by side and do not pick a winner: the value is"
            f" unknown — disputed until a steward resolves conflict {body['conflict']}."
        )
    if body["look_alikes"]:
        resolved = "; ".join(
            f"{alike['role']} “{alike['given']}” is the existing entity “{alike['entity']}”"
            for alike in body["look_alikes"]
        )
        instruction = " ".join(
            part
            for part in (
                f"Resolved by look ({resolved}): the spelling given looks like that entity's"
                " name, so the fact is about it. Use the entity's own name from now on.",
                instruction,
            )
            if part
        )
    return {**body, "instruction": instruction}


OPERATIONS = (
    Operation(
        name="assert_fact",
        title="Assert a fact",
        description=(
            "Record one fact (subject, predicate, object) through the write path, which weighs"
            " it against what the scope already believes. Answers status: created (stored),"
            " reinforced (already known: nothing new, its clock restarts), superseded (it"
            " replaced the slot's previous value, listed in superseded) or flagged (it"
            " contradicts what stands: stored as disputed, reason says why, candidates are the"
            " facts it collided with — show them to a human and do not pick a winner)."
        ),
        arguments=FactIn,
        answer=AssertAnswer,
        run=_assert,
        writes=True,
        idempotent=False,
    ),
    Operation(
        name="recall",
        title="Recall the current truth",
        description=(
            "What the scope currently believes, ranked by effective confidence: admitted,"
            " undisputed facts (and your own private ones), optionally for one subject or"
            " predicate, as of a valid time and as known at a transaction time. Disputed values"
            " are left out; with contested: true they come back in `contested`, by slot, with"
            " their conflicts and what the slot shows: `contested` (its `standing` facts stay"
            " current, the disputed values contest them) or `unknown` (nothing in a conflict is"
            " current: say unknown — disputed and show the candidates, never pick one)."
        ),
        arguments=TruthQuery,
        answer=TruthOut,
        run=truth_answer,
    ),
    Operation(
        name="get_fact",
        title="Get one fact",
        description=(
            "One fact by id: its fields, effective confidence (now, or at `at`), whether it is"
            " disputed, and its admission status (candidate, admitted, rejected, suspended) with"
            " the explanation of why. Not found when it does not exist or is not yours to see."
        ),
        arguments=FactAt,
        answer=FactOut,
        run=lambda actor, arguments: present_shown_fact(
            shown_fact(actor, arguments.fact_id), at=arguments.at or timezone.now()
        ),
    ),
    Operation(
        name="slot_history",
        title="History of one slot",
        description=(
            "Every version of one slot (scope, subject, predicate; a stance predicate brings"
            " its whole exclusion group), current and past, oldest first, each with how it"
            " ended: live, bounded, superseded (by which fact), invalidated (why, by whom) or"
            " withdrawn."
        ),
        arguments=SlotHistoryQuery,
        answer=SlotHistoryPage,
        run=history_answer,
    ),
    Operation(
        name="list_conflicts",
        title="List conflicts",
        description=(
            "Conflicts in your scopes with their candidate facts side by side, oldest first;"
            " filter by scope and status (open, resolved). Only a steward resolves a conflict."
        ),
        arguments=ConflictQuery,
        answer=ConflictPage,
        run=conflicts_answer,
    ),
    Operation(
        name="challenge_fact",
        title="Challenge a fact",
        description=(
            "Say, with a ground and evidence refs, that an admitted shared fact is wrong. An"
            " evidenced challenge suspends the fact until a steward answers it, within your"
            " flood cap; leave evidence out to put a doubt on record without effect (an empty"
            " list is refused). The answer's effect says what it did: suspended, queued (beyond"
            " your flood cap: no effect yet), dormant (the fact is not admitted) or none (no"
            " evidence), and effect_reason why; tell your user when it is not suspended. One"
            " open challenge per fact: a second is refused (challenge_already_open)."
        ),
        arguments=ChallengeArguments,
        answer=ChallengeOut,
        run=lambda actor, arguments: challenge_answer(actor, arguments.fact_id, arguments),
        writes=True,
        idempotent=False,
    ),
    Operation(
        name="report_outcome",
        title="Report an accepted outcome",
        description=(
            "Report the facts an accepted piece of work relied on: their disuse clock restarts"
            " and the fact pages show the receipt."
        ),
        arguments=OutcomeIn,
        answer=OutcomeOut,
        run=lambda actor, arguments: present_outcome(
            record_outcome(actor=actor, fact_ids=arguments.fact_ids, outcome=arguments.outcome)
        ),
        writes=True,
        idempotent=False,
    ),
    Operation(
        name="invalidate_fact",
        title="Invalidate a fact",
        description=(
            "End a fact that stopped being true, with a reason: its valid time closes now and"
            " it stays in the history. Its author or a steward may; an already invalid fact is"
            " a state_conflict. Never use it to settle a dispute: that is a steward's ruling."
        ),
        arguments=InvalidateArguments,
        answer=InvalidateOut,
        run=lambda actor, arguments: present_invalidation(
            invalidate_fact(actor=actor, fact_id=arguments.fact_id, reason=arguments.reason)
        ),
        writes=True,
        destructive=True,
    ),
    Operation(
        name="context",
        title="Context digest",
        description=(
            "A compact Markdown digest of what a scope (or one subject) believes, for the start"
            " of a session: commitments first, then current truth by effective confidence, then"
            " open conflicts as unknown — disputed with their candidates, within `budget`"
            " characters. The text content is the Markdown itself."
        ),
        arguments=ContextQuery,
        answer=ContextOut,
        run=context_answer,
    ),
    Operation(
        name="list_scopes",
        title="List your scopes",
        description=(
            "The scopes you may read and write, by name: your role in each (member or"
            " steward), the source types your role may claim when asserting there, and what"
            " each holds now (live facts, open conflicts, candidates awaiting a verdict). Call"
            " it first: every other tool takes one of these names as `scope`."
        ),
        arguments=ScopesQuery,
        answer=ScopePage,
        run=scopes_answer,
    ),
    Operation(
        name="vocabulary",
        title="The vocabulary",
        description=(
            "Every value an assertion may name: the predicates (with cardinality, exclusion"
            " group, policy on a contradiction and what they mean), the source types (trust"
            " rank and confidence ceiling, most trusted first), the epistemic classes, object"
            " kinds and buckets. Predicates and source types are edited by admins, so read"
            " them here rather than guessing."
        ),
        arguments=VocabularyQuery,
        answer=VocabularyOut,
        run=vocabulary_answer,
    ),
    Operation(
        name="search",
        title="Search facts",
        description=(
            "Find facts by what they say when you do not know the exact subject: words of a"
            " value, a statement or evidence, or a subject's name or alias (typos forgiven),"
            " in every scope you may read or one. Results are grouped by slot, best match"
            " first, each fact with its rank; a slot's disputed values come apart in"
            " `contested` with their conflicts: show them side by side, never pick one."
            " Nothing found: `did_you_mean` lists the nearest entity names. Then recall the"
            " subject for its current truth."
        ),
        arguments=SearchParameters,
        answer=SearchOut,
        run=search_answer,
    ),
)


# --- one call ---------------------------------------------------------------------------


def _validated(model: type[BaseModel], arguments: dict[str, Any]) -> BaseModel:
    """``arguments`` checked by the JSON API's schema, refused as the JSON API refuses."""
    if issubclass(model, QueryParameters):
        model.refuse_unknown_names(arguments)
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        # The JSON API's handler names the field from a location under the
        # body; the arguments are the body.
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        raise InvalidInput([{**error, "loc": ("body", *error["loc"])} for error in errors]) from exc


def _refusal(exc: Exception) -> dict[str, Any]:
    """The JSON API's error body for ``exc``; for anything it does not answer, a generic one."""
    try:
        body = json.loads(api.on_exception(HttpRequest(), exc).content)
    except Exception:
        body = None
    if isinstance(body, dict) and {"code", "message"} <= body.keys():
        return body
    logger.error("MCP tool call failed", exc_info=exc)
    return {"code": "internal", "message": "the server could not answer; the error is logged"}


def _answer(
    operation: Operation, caller_of: CallerOf, request: Any, arguments: dict[str, Any]
) -> CallToolResult:
    # As Django does around each request: drop a connection that is too
    # old or broken before, and one past its CONN_MAX_AGE after. Over HTTP
    # the request is the bracket (``api.mcp.http``: its token check opened
    # the connection this call uses); over stdio each call is its own.
    stands_alone = request is None
    if stands_alone:
        close_old_connections()
    try:
        caller = caller_of(request)
        if operation.writes and caller.token is not None:
            # Charged before the arguments are read, as the JSON API charges
            # a write before it parses the body: a refused write counts too.
            spend_write(caller.token, per_minute=settings.CLAIMGRAPH_API_WRITE_RATE)
        body = operation.run(caller.user, _validated(operation.arguments, arguments))
    except Exception as exc:  # every refusal is an answer, never a broken session
        refusal = _refusal(exc)
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(refusal))],
            structured_content=refusal,
            is_error=True,
        )
    finally:
        if stands_alone:
            close_old_connections()
    structured = json.loads(json.dumps(body, cls=AnswerEncoder))
    content = [TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))]
    if operation.name == "context":
        content = [TextContent(type="text", text=structured["markdown"])]
    elif structured.get("instruction"):
        content.insert(0, TextContent(type="text", text=structured["instruction"]))
    return CallToolResult(content=content, structured_content=structured)


class _Arguments(ArgModelBase):
    """The arguments as sent: the operation's own schema checks them, in ``_answer``."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    # Described from the JSON API's one table of notes, as its OpenAPI document is.
    return describe(model.model_json_schema())


def _tool(operation: Operation, caller_of: CallerOf) -> Tool:
    async def call(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        request = ctx.request_context.request  # the HTTP request; None over stdio
        return await sync_to_async(_answer, thread_sensitive=True)(
            operation, caller_of, request, arguments
        )

    return Tool(
        fn=call,
        name=operation.name,
        title=operation.title,
        description=operation.description,
        parameters=_input_schema(operation.arguments),
        fn_metadata=FuncMetadata(
            arg_model=_Arguments,
            output_schema=describe(operation.answer.model_json_schema(mode="serialization")),
        ),
        is_async=True,
        context_kwarg="ctx",
        annotations=ToolAnnotations(
            title=operation.title,
            read_only_hint=not operation.writes,
            destructive_hint=operation.destructive if operation.writes else None,
            idempotent_hint=operation.idempotent if operation.writes else None,
            open_world_hint=False,
        ),
    )


class ClaimgraphServer(MCPServer):
    """The SDK's server, answering a prompt it does not have as bad params, not a failure.

    The SDK raises a plain ValueError for an unknown prompt name, which its
    dispatcher logs with a traceback and answers with error code 0; a name the
    caller chose is the caller's error (-32602), and nothing to log.
    """

    async def get_prompt(self, name, arguments=None, context=None):
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")
        return await super().get_prompt(name, arguments, context)


def build_server(
    caller_of: CallerOf,
    *,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> MCPServer:
    """The claimgraph MCP server: its instructions and its tools, acting as ``caller_of``."""
    return ClaimgraphServer(
        name="claimgraph",
        title="claimgraph",
        description="A shared memory for AI agents, looked after by human stewards.",
        instructions=INSTRUCTIONS,
        version="1",
        tools=[_tool(operation, caller_of) for operation in OPERATIONS],
        token_verifier=token_verifier,
        auth=auth,
        subscriptions=False,
    )
