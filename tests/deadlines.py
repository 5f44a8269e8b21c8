"""How long a test waits for a condition before it calls the wait a failure.

The suite runs on developers' own machines, often busy with other work: a
page may take seconds to load, a subprocess many seconds to start. So a test
never waits a fixed time for something to happen, and never gives up after a
time tuned to an idle machine. It waits on the condition itself (a page's
text, a server answering, a row in the database), bounded by one of the two
deadlines below, which only a broken test or a broken program reaches. A
wait ends as soon as its condition holds, so a long deadline costs nothing
when all goes well.

- ``BROWSER_DEADLINE`` (``CLAIMGRAPH_TEST_BROWSER_DEADLINE``, 60 s): each of
  Playwright's waits in the browser tests (navigation, locators, ``expect``).
- ``PROCESS_DEADLINE`` (``CLAIMGRAPH_TEST_PROCESS_DEADLINE``, 120 s): each
  wait on a subprocess, a live server or another thread (start, answer, stop).

Both are seconds, from the environment, so a slower machine can raise them
without editing a test. This module imports nothing of Django: helpers that
start processes import it before any settings exist.
"""

import os
import time
from collections.abc import Callable


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise RuntimeError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not value > 0:
        raise RuntimeError(f"{name} must be more than 0 seconds, not {raw!r}")
    return value


BROWSER_DEADLINE: float = _seconds("CLAIMGRAPH_TEST_BROWSER_DEADLINE", 60.0)
PROCESS_DEADLINE: float = _seconds("CLAIMGRAPH_TEST_PROCESS_DEADLINE", 120.0)


def wait_until[T](
    condition: Callable[[], T | None],
    *,
    what: str,
    deadline: float = PROCESS_DEADLINE,
    every: float = 0.05,
) -> T:
    """Poll ``condition`` until it returns something true, and return that.

    Fails (``AssertionError`` naming ``what``) only once ``deadline`` seconds
    have passed without it holding.
    """
    give_up = time.monotonic() + deadline
    while not (found := condition()):
        if time.monotonic() > give_up:
            raise AssertionError(f"timed out after {deadline:g} s waiting for {what}")
        time.sleep(every)
    return found
