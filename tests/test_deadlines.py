"""The tests' two deadlines come from the environment; a wait ends when its condition holds."""

import importlib

import pytest

from tests import deadlines


@pytest.fixture
def reread(monkeypatch):
    """``tests.deadlines`` as read with the environment of the test; reloaded back after."""

    def read(**environment: str):
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        return importlib.reload(deadlines)

    yield read
    monkeypatch.undo()
    importlib.reload(deadlines)


def test_the_defaults_are_generous(reread, monkeypatch):
    monkeypatch.delenv("CLAIMGRAPH_TEST_BROWSER_DEADLINE", raising=False)
    monkeypatch.delenv("CLAIMGRAPH_TEST_PROCESS_DEADLINE", raising=False)
    read = reread()
    assert (read.BROWSER_DEADLINE, read.PROCESS_DEADLINE) == (60.0, 120.0)


def test_each_deadline_is_read_from_its_variable_in_seconds(reread):
    read = reread(CLAIMGRAPH_TEST_BROWSER_DEADLINE="90", CLAIMGRAPH_TEST_PROCESS_DEADLINE="300.5")
    assert (read.BROWSER_DEADLINE, read.PROCESS_DEADLINE) == (90.0, 300.5)


@pytest.mark.parametrize("value", ["soon", "0", "-5"])
def test_a_deadline_that_cannot_work_is_refused(reread, value):
    with pytest.raises(RuntimeError, match="CLAIMGRAPH_TEST_PROCESS_DEADLINE"):
        reread(CLAIMGRAPH_TEST_PROCESS_DEADLINE=value)


def test_a_wait_returns_what_the_condition_found_as_soon_as_it_holds():
    answers = iter([None, False, 0, 42, 43])
    assert deadlines.wait_until(lambda: next(answers), what="an answer", every=0.01) == 42
    assert next(answers) == 43  # not asked again once it held


def test_a_wait_whose_condition_never_holds_fails_at_its_deadline_naming_it():
    with pytest.raises(AssertionError, match=r"timed out after 0\.2 s waiting for the moon"):
        deadlines.wait_until(lambda: None, what="the moon", deadline=0.2, every=0.01)
