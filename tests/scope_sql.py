"""A small reader of SQL statements: which per-scope tables a statement reaches, and how.

docs/scale-out.md distributes the store by scope on Citus. A statement runs
on one shard (a *router* query) when every distributed table it reads is tied
to one scope: its ``scope_id`` compared with a value (``= %s``, ``= ANY(%s)``,
``IN (%s, ...)``, a function's parameter), or equal to the ``scope_id`` of
another table that is. Tables tied to each other by ``scope_id`` but to no
value are co-located but unrouted (*every shard*): Citus runs the statement
on every shard at once, right for the few walks that cross scopes on
purpose, wrong on a hot path. A distributed table tied to the others by
anything else (``fact.subject_id = entity.id``) or by nothing is *unscoped*:
Citus refuses such a join, or must send the statement to every shard.

The reader is deliberately small: it tokenizes, finds the table references
of every ``FROM``/``JOIN``/``UPDATE``/``INTO`` with their aliases, resolves
column references by SQL's own scoping (the innermost parenthesised block
that names the alias), and joins references by the equalities it finds. It
does not weigh ``OR``: a comparison inside one branch counts as a tie, so it
may pass a statement it should not, never the other way round. Its own
tests are in ``tests/test_scope_filters.py``.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

# The tables docs/scale-out.md distributes by scope_id, and the view over them.
PER_SCOPE = frozenset(
    {
        "memories_entity",
        "memories_fact",
        "memories_conflict",
        "memories_conflictmember",
        "memories_outcome",
        "memories_outcome_facts",
        "memories_auditentry",
        "memories_entitymerge",
        "memories_withdrawal",
        "memories_reviewclaim",
        "memories_truthslot",
        "memories_touchedslot",
        "memories_adjudication",
        "memories_admittedfact",
        "admissions_record",
        "admissions_factverdict",
        "admissions_openchallenge",
        "admissions_scopetally",
        "admissions_challenge_rank",
    }
)

ROUTER = "router"  # every per-scope table tied to one scope value: one shard
EVERY_SHARD = "every shard"  # tied to each other by scope_id, to no value
UNSCOPED = "unscoped"  # some per-scope table tied by something else, or nothing

_TOKEN = re.compile(
    r"""
      (?P<space>\s+|--[^\n]*|/\*.*?\*/)
    | (?P<dollar>\$(?P<tag>[A-Za-z_]*)\$.*?\$(?P=tag)\$)
    | (?P<string>(?:[EeBbXxUu]&?)?'(?:[^']|'')*')
    | (?P<quoted>"(?:[^"]|"")*")
    | (?P<param>%s|%\(\w+\)s|\$\d+)
    | (?P<number>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
    | (?P<word>[A-Za-z_][A-Za-z_0-9$]*)
    | (?P<op>::|<>|!=|<=|>=|=|[-+*/<>@&|^~!#%]+)
    | (?P<punct>[(),.;\[\]:])
    """,
    re.VERBOSE | re.DOTALL,
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_KEYWORDS = _words(
    """
    select from where join inner left right full outer cross natural on using group order
    by limit offset union except intersect all distinct set values as and or not in is
    null returning lateral for update delete insert into with having window do conflict
    nothing case when then else end exists any some between like ilike over partition
    fetch first rows only asc desc nulls last true false into perform return query begin
    if elsif raise notice exception declare loop while copy stdin stdout share mode lock
    table key no skip locked nowait of filter
    """
)
_ENDS_FROM = _words(
    "where group order limit offset union except intersect having window returning for "
    "set values on using do select"
)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str  # identifiers unquoted and lower-cased
    block: int  # the parenthesised block the token stands in
    chain: tuple[int, ...]  # that block and the blocks around it, innermost first


@dataclass
class Reference:
    table: str
    alias: str
    block: int


@dataclass
class Reading:
    """What the reader found in one statement."""

    statement: str
    references: list[Reference] = field(default_factory=list)
    unscoped: list[str] = field(default_factory=list)  # per-scope tables tied to nothing
    verdict: str = ROUTER
    calls: list[str] = field(default_factory=list)  # functions the statement calls


def tokens(sql: str) -> list[Token]:
    out: list[Token] = []
    blocks = [0]
    counter = 0
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup
        if kind == "tag":  # the inner group of a dollar quote
            kind = "dollar"
        text = match.group()
        if kind == "space":
            continue
        if kind == "quoted":
            kind, text = "word", text[1:-1].replace('""', '"')
        elif kind == "word":
            text = text.lower()
        if text == "(":
            counter += 1
            blocks.append(counter)
            out.append(Token("punct", text, counter, tuple(reversed(blocks))))
            continue
        if text == ")":
            out.append(Token("punct", text, blocks[-1], tuple(reversed(blocks))))
            if len(blocks) > 1:
                blocks.pop()
            continue
        out.append(Token(kind, text, blocks[-1], tuple(reversed(blocks))))
    return out


def _is_name(token: Token) -> bool:
    return token.kind == "word" and token.text not in _KEYWORDS


def _references(toks: list[Token]) -> list[Reference]:
    refs: list[Reference] = []
    i = 0
    in_from: set[int] = set()  # blocks whose FROM list is being read
    while i < len(toks):
        tok = toks[i]
        starts = tok.kind == "word" and tok.text in ("from", "join", "update", "into", "copy")
        if tok.kind == "word" and tok.text in _ENDS_FROM and tok.text != "on":
            in_from.discard(tok.block)
        if tok.kind == "word" and tok.text == "from":
            in_from.add(tok.block)
        comma_in_from = tok.text == "," and tok.kind == "punct" and tok.block in in_from
        if (starts or comma_in_from) and i + 1 < len(toks):
            j = i + 1
            if toks[j].kind == "word" and toks[j].text == "only":
                j += 1
            if j < len(toks) and _is_name(toks[j]):
                name = toks[j].text
                j += 1
                while j + 1 < len(toks) and toks[j].text == "." and toks[j + 1].kind == "word":
                    name = toks[j + 1].text  # schema-qualified: keep the table's own name
                    j += 2
                if j < len(toks) and toks[j].text == "(" and tok.text in ("from", "join", ","):
                    i = j  # a function in FROM, not a table
                    continue
                alias = name
                if j < len(toks) and toks[j].kind == "word" and toks[j].text == "as":
                    j += 1
                if j < len(toks) and _is_name(toks[j]) and toks[j].block == tok.block:
                    alias = toks[j].text
                refs.append(Reference(name, alias, tok.block))
                i = j
                continue
        i += 1
    return refs


def _resolve(refs: list[Reference], qualifier: str | None, chain: tuple[int, ...]) -> int | None:
    """The reference a column belongs to: by alias, innermost block first."""
    for current in chain:
        here = [n for n, ref in enumerate(refs) if ref.block == current]
        if qualifier is None:
            holders = [n for n in here if refs[n].table in PER_SCOPE]
            if len(holders) == 1:
                return holders[0]
            if holders:
                return None
        else:
            for n in here:
                if refs[n].alias == qualifier:
                    return n
    return None


def _column(toks: list[Token], i: int) -> tuple[str | None, str, tuple[int, ...], int] | None:
    """A column reference starting at ``i``: (qualifier, column, its blocks, next index)."""
    if not _is_name(toks[i]) and toks[i].text not in ("new",):
        return None
    if i + 2 < len(toks) and toks[i + 1].text == "." and toks[i + 2].kind == "word":
        return toks[i].text, toks[i + 2].text, toks[i].chain, i + 3
    return None, toks[i].text, toks[i].chain, i + 1


def _constant(toks: list[Token], i: int, refs: list[Reference]) -> bool:
    """Whether the operand at ``i`` is a value fixed for the statement's run."""
    tok = toks[i]
    if tok.kind in ("param", "number", "string"):
        return True
    if tok.kind == "word" and tok.text in ("any", "array") and i + 1 < len(toks):
        return _constant_list(toks, i + 1, refs)
    if tok.kind == "word" and (tok.text.startswith("p_") or tok.text == "new"):
        return True  # a SQL function's parameter, a trigger's NEW row
    if tok.text == "(":
        return _constant_list(toks, i, refs)
    column = _column(toks, i)
    if column and column[0] is None and _resolve(refs, None, column[2]) is None:
        # A bare name no table of the statement holds: a PL/pgSQL variable.
        return column[1] not in ("scope_id", "id")
    return False


def _constant_list(toks: list[Token], i: int, refs: list[Reference]) -> bool:
    """``( value, value, ... )`` or ``[ ... ]`` of values only: no subquery, no column."""
    opening = toks[i]
    if opening.text not in ("(", "["):
        return False
    inner = []
    depth = 0
    for tok in toks[i:]:
        if tok.text in ("(", "["):
            depth += 1
            if depth == 1:
                continue
        elif tok.text in (")", "]"):
            depth -= 1
            if depth == 0:
                break
        inner.append(tok)
    if not inner:
        return False
    return all(
        tok.kind in ("param", "number", "string")
        or tok.text in (",", "::", "[", "]")
        or (tok.kind == "word" and tok.text in ("bigint", "integer", "int", "array", "uuid"))
        for tok in inner
    )


class _Ties:
    """Union-find over references, with one extra node for 'a value'."""

    def __init__(self, size: int) -> None:
        self.parent = list(range(size + 1))
        self.value = size

    def find(self, n: int) -> int:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def join(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def read(sql: str) -> Reading:
    """Read one statement: its per-scope references and whether they are tied to a scope."""
    toks = tokens(sql)
    refs = _references(toks)
    reading = Reading(statement=sql, references=refs)
    reading.calls = sorted(
        {
            tok.text
            for n, tok in enumerate(toks[:-1])
            if tok.kind == "word"
            and toks[n + 1].text == "("
            and tok.text.startswith(("claimgraph_", "admissions_"))
        }
    )
    ties = _Ties(len(refs))
    for n, tok in enumerate(toks):
        if tok.kind == "word" and tok.text == "copy":
            _tie_copy(toks, n, refs, ties)
        if tok.kind == "word" and tok.text == "into" and n + 1 < len(toks):
            _tie_insert(toks, n, refs, ties)
        column = _column(toks, n)
        if column is None or column[1] != "scope_id":
            continue
        qualifier, _name, chain, after = column
        if n > 0 and toks[n - 1].text == ".":
            continue  # the tail of a longer name
        left = _resolve(refs, qualifier, chain)
        # The mirror: <operand> = x.scope_id is found when the reader reaches the
        # operand, if it is a column; a value on the left is read here.
        if (
            n >= 2
            and toks[n - 1].text == "="
            and left is not None
            and toks[n - 2].kind != "word"
            and _constant(toks, n - 2, refs)
        ):
            ties.join(left, ties.value)
        if after >= len(toks):
            continue
        op = toks[after]
        if op.text == "=" and after + 1 < len(toks):
            _tie_operand(toks, after + 1, left, refs, ties)
        elif (
            op.kind == "word"
            and op.text == "in"
            and after + 1 < len(toks)
            and left is not None
            and _constant_list(toks, after + 1, refs)
        ):
            ties.join(left, ties.value)
    _settle(reading, refs, ties)
    return reading


def _tie_operand(
    toks: list[Token], i: int, left: int | None, refs: list[Reference], ties: _Ties
) -> None:
    column = _column(toks, i)
    if column is not None and column[1] == "scope_id" and toks[i].text not in ("new",):
        right = _resolve(refs, column[0], column[2])
        if left is not None and right is not None:
            ties.join(left, right)
        return
    if left is not None and _constant(toks, i, refs):
        ties.join(left, ties.value)


def _column_list(toks: list[Token], i: int) -> list[str]:
    if i >= len(toks) or toks[i].text != "(":
        return []
    names = []
    for tok in toks[i + 1 :]:
        if tok.text == ")" and tok.block == toks[i].block:
            break
        if tok.kind == "word":
            names.append(tok.text)
    return names


def _tie_insert(toks: list[Token], n: int, refs: list[Reference], ties: _Ties) -> None:
    """``INSERT INTO t (scope_id, ...)``: the row names its scope."""
    j = n + 2
    if j < len(toks) and toks[j].text == "as":
        j += 1
    alias = toks[n + 1].text
    if j < len(toks) and toks[j].kind == "word" and toks[j].text not in _KEYWORDS:
        alias = toks[j].text
        j += 1
    for index, ref in enumerate(refs):
        if ref.block == toks[n].block and ref.alias == alias:
            if "scope_id" in _column_list(toks, j):
                ties.join(index, ties.value)
            return


def _tie_copy(toks: list[Token], n: int, refs: list[Reference], ties: _Ties) -> None:
    """``COPY t (scope_id, ...) FROM STDIN``: each row names its scope, and Citus routes it."""
    if n + 2 < len(toks) and "scope_id" in _column_list(toks, n + 2):
        for index, ref in enumerate(refs):
            if ref.block == toks[n].block and ref.alias == toks[n + 1].text:
                ties.join(index, ties.value)


def _settle(reading: Reading, refs: list[Reference], ties: _Ties) -> None:
    mine = [n for n, ref in enumerate(refs) if ref.table in PER_SCOPE]
    if not mine:
        reading.verdict = ROUTER
        return
    tied = {n for n in mine if ties.find(n) == ties.find(ties.value)}
    groups = {ties.find(n) for n in mine}
    if len(tied) == len(mine):
        reading.verdict = ROUTER
    elif len(groups) == 1 and not tied:
        reading.verdict = EVERY_SHARD
    else:
        reading.verdict = UNSCOPED
    if reading.verdict != ROUTER:
        # With a table tied to a value, the others are what is missing; with
        # none, every per-scope table of the statement is.
        main = ties.find(ties.value) if tied else None
        reading.unscoped = sorted(
            {refs[n].table for n in mine if main is None or ties.find(n) != main}
        )


# --- the SQL that runs inside the database ---------------------------------------------

_FUNCTION = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)\s*\(.*?\bAS\s+\$(\w*)\$(.*?)\$\2\$",
    re.IGNORECASE | re.DOTALL,
)
_VIEW = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(\w+)\s+AS\s+(.*?);", re.I | re.S)
_TRIGGER = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+\w+.*?\bON\s+(\w+).*?EXECUTE\s+FUNCTION\s+(\w+)",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True)
class ServerSql:
    """The text of every SQL function, view and trigger our sql/ files define."""

    functions: dict[str, list[str]]  # name -> its statements
    views: dict[str, str]
    triggers: dict[str, list[str]]  # table -> trigger functions fired on writes to it

    @classmethod
    def load(cls, root: Path) -> "ServerSql":
        functions: dict[str, list[str]] = {}
        views: dict[str, str] = {}
        triggers: dict[str, list[str]] = {}
        for path in sorted(root.glob("*/sql/*.sql")):
            text = path.read_text()
            for name, _tag, body in _FUNCTION.findall(text):
                functions[name.lower()] = statements(body)
            for name, body in _VIEW.findall(text):
                views[name.lower()] = body
            for table, function in _TRIGGER.findall(text):
                triggers.setdefault(table.lower(), []).append(function.lower())
        return cls(functions, views, triggers)


def statements(body: str) -> list[str]:
    """The SQL statements of a function body: SELECT/INSERT/UPDATE/DELETE/WITH, one each.

    PL/pgSQL control lines (IF, RETURN) are dropped; ``PERFORM`` is read as
    ``SELECT``, ``SELECT ... INTO var`` and ``RETURN QUERY`` keep their query,
    and a query inside ``IF EXISTS (...)`` ends at its parenthesis.
    """
    pieces = []
    depth = 0
    current: list[str] = []
    for tok in _TOKEN.finditer(body):
        text = tok.group()
        if text == "(":
            depth += 1
        elif text == ")":
            depth -= 1
        if text == ";" and depth == 0:
            pieces.append("".join(current))
            current = []
            continue
        current.append(text)
    pieces.append("".join(current))
    found = []
    for piece in pieces:
        while True:
            match = re.search(
                r"\b(SELECT|PERFORM|INSERT|UPDATE|DELETE|WITH)\b", piece, re.IGNORECASE
            )
            if match is None:
                break
            query, piece = _until_unbalanced(piece[match.start() :])
            if match.group(1).upper() == "PERFORM":  # PL/pgSQL's SELECT without a result
                query = "SELECT" + query[len("PERFORM") :]
            # SELECT ... INTO variables FROM ...: the variables are not tables.
            if query.upper().startswith("SELECT"):
                query = re.sub(r"\bINTO\b.*?\bFROM\b", "FROM", query, count=1, flags=re.I | re.S)
            found.append(query.strip())
    return found


def _until_unbalanced(text: str) -> tuple[str, str]:
    """Split ``text`` where a parenthesis closes one it did not open (``IF EXISTS (...)``)."""
    depth = 0
    for tok in _TOKEN.finditer(text):
        if tok.group() == "(":
            depth += 1
        elif tok.group() == ")":
            depth -= 1
            if depth < 0:
                return text[: tok.start()], text[tok.end() :]
    return text, ""


def tables_written(sql: str) -> list[str]:
    """The tables an INSERT/UPDATE/DELETE/COPY writes (for their triggers)."""
    toks = tokens(sql)
    written = []
    for n, tok in enumerate(toks[:-1]):
        if tok.kind == "word" and tok.text in ("into", "update", "copy") and _is_name(toks[n + 1]):
            written.append(toks[n + 1].text)
        deletes = tok.kind == "word" and tok.text == "delete" and toks[n + 1].text == "from"
        if deletes and n + 2 < len(toks):
            written.append(toks[n + 2].text)
    return written
