"""Benchmark: an agent's search next to one write, in one process (issue 31 §1).

Not a test. One agent account, over Django's handler (the test client,
every middleware, DEBUG off), takes turns request by request between
``POST /api/v1/facts`` (as ``bench/reads.py`` writes) and
``GET /api/v1/search`` across every scope it reads, for a word that the
bench first writes into ``NEEDLES`` facts of the sample subjects: the same
number of matches at every size, so what grows is only the store around
them. Targets (issue 31): search p95 at most twice the POST's p95 (the figure is the
worse of the p95 and the median ratios, as in ``bench/reads.py``), its p95
growing ≤ 1.3 from the small store to the large one (``bench/scale.py``), and
its statements per request the same at both sizes and for one match as
for all of them.

``measure(store)`` is what ``bench/scale.py`` calls (``--only search``).
"""

import json
import time
from urllib.parse import urlencode

from _figures import Figure, Store, p95
from reads import StatementCounter, connections_kept, prepare

NEEDLES = 12
# A word no generated fact holds (bench/generate.py writes names, versions, tools).
WORD = "quokka"
PER_ROUND = 150
TARGET = 2.0
MEASURE = "GET /api/v1/search (one word, every scope) / POST /api/v1/facts"


def measure(store: Store, *, rounds: int = 3, per_round: int = PER_ROUND) -> list[Figure]:
    from django.test import override_settings

    with override_settings(CLAIMGRAPH_API_WRITE_RATE=1_000_000), connections_kept():
        return _measure(store, rounds=rounds, per_round=per_round)


def _measure(store: Store, *, rounds: int, per_round: int) -> list[Figure]:
    requests = prepare(store)
    try:
        client, headers = requests.client, requests.headers

        def search(word: str = WORD) -> tuple[int, bytes]:
            response = client.get(
                f"/api/v1/search?{urlencode({'q': word})}", headers=headers, secure=True
            )
            return response.status_code, response.content

        def write_needle(n: int) -> None:
            body = requests.writes[n % len(requests.writes)] | {
                "object": f"{WORD} habitat {n}",
                "statement": f"seen a {WORD} near the {n}th deploy",
            }
            response = client.post(
                "/api/v1/facts",
                json.dumps(body),
                content_type="application/json",
                headers=headers,
                secure=True,
            )
            assert response.status_code in (200, 201), response.content[:400]

        write_needle(0)
        one = _statements(search)
        for n in range(1, NEEDLES):
            write_needle(n)
        status, body = search()
        assert status == 200, body[:400]
        found = json.loads(body)["count"]
        assert found == NEEDLES, f"expected {NEEDLES} matches, found {found}"
        many = _statements(search)

        calls = {"POST": requests.post, "search": search}
        for name, call in calls.items():  # warm every path
            for _ in range(10):
                _checked(name, call())
        times: dict[str, list[float]] = {name: [] for name in calls}
        for round_ in range(rounds):
            order = list(calls.items())
            if round_ % 2:
                order.reverse()
            for _ in range(per_round):
                for name, call in order:
                    started = time.perf_counter()
                    answer = call()
                    times[name].append(time.perf_counter() - started)
                    _checked(name, answer)
    finally:
        requests.mcp.close()
    ms = {name: 1000 * p95(values) for name, values in times.items()}
    medians = {name: 1000 * sorted(values)[len(values) // 2] for name, values in times.items()}
    ratio = max(ms["search"] / ms["POST"], medians["search"] / medians["POST"])
    return [
        Figure(
            measure=MEASURE,
            value=round(ratio, 3),
            target=f"<= {TARGET}",
            detail=(
                f"p95 {ms['search']:.2f} ms vs {ms['POST']:.2f} ms (median"
                f" {medians['search']:.2f} vs {medians['POST']:.2f}); {NEEDLES} matches;"
                f" {len(times['search'])} of each in {rounds} rounds"
            ),
            p95_ms={"search": round(ms["search"], 3)},
            queries=many,
        ),
        Figure(
            measure="GET /api/v1/search statements, 1 match vs 12",
            value=abs(many - one),
            target="constant",
            detail=f"{one} statements for 1 match, {many} for {NEEDLES}",
        ),
    ]


def _statements(call) -> int:
    counter = StatementCounter()
    call()  # once first: nothing a process reads once is counted
    with counter.counting():
        status, body = call()
    assert status == 200, body[:400]
    return counter.count


def _checked(name: str, answer: tuple[int, bytes]) -> None:
    status, body = answer
    expected = (200, 201) if name == "POST" else (200,)
    assert status in expected, (name, status, body[:400])
