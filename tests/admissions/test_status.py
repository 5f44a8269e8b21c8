"""The status fold (SPEC §6), as data in and data out: no database, no clock."""

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from admissions.status import challenge_cap, derive
from tests.admissions.histories import History, fact

SHARE = 25


def statuses(history: History, share: int = SHARE) -> dict:
    folded = derive(history.records, share_percent=share)
    return {fact_id: status.status for fact_id, status in folded.statuses.items()}


def status_of(history: History, target, share: int = SHARE):
    return derive(history.records, share_percent=share).status_of(target)


# --- rule 1: the latest admission record decides ------------------------------------


def test_a_fact_without_an_admission_record_is_a_candidate():
    history = History()
    history.challenge(fact(1), at=1, by=7)
    status = status_of(history, fact(1))
    assert status.status == "candidate"
    assert status.findings[0].rule == 1


def test_a_fact_with_no_record_at_all_is_a_candidate():
    assert status_of(History(), fact(9)).status == "candidate"


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        (["admitted"], "admitted"),
        (["rejected"], "rejected"),
        (["admitted", "rejected"], "rejected"),
        (["rejected", "admitted"], "admitted"),
        (["admitted", "rejected", "admitted"], "admitted"),
    ],
)
def test_the_latest_verdict_decides(verdicts, expected):
    history = History()
    for minute, verdict in enumerate(verdicts):
        history.verdict(fact(1), verdict, at=minute)
    assert status_of(history, fact(1)).status == expected


def test_a_verdict_backdated_before_the_latest_does_not_decide():
    history = History()
    history.verdict(fact(1), "admitted", at=10)
    history.verdict(fact(1), "rejected", at=5)  # written second, dated earlier
    status = status_of(history, fact(1))
    assert status.status == "admitted"
    assert status.verdict_record == history.records[0].id


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_equal_inserted_at_ties_are_broken_by_id_every_time(order):
    written = [
        ("admitted", 500),
        ("rejected", 900),  # the highest id: the latest of three equal times
        ("admitted", 700),
    ]
    history = History()
    for index in order:
        verdict, record_id = written[index]
        history.verdict(fact(1), verdict, at=0, id=record_id)
    status = status_of(history, fact(1))
    assert status.status == "rejected"
    assert status.verdict_record.int == 900


# --- rule 2: only an admitted fact can be suspended -----------------------------------


@pytest.mark.parametrize("verdict", [None, "rejected"])
def test_a_challenge_against_a_candidate_or_rejected_fact_changes_nothing(verdict):
    history = History()
    if verdict:
        history.verdict(fact(1), verdict)
    challenge = history.challenge(fact(1), at=1, by=7)
    status = status_of(history, fact(1))
    assert status.status == (verdict or "candidate")
    assert status.suspended_by == ()
    assert any(f.rule == 2 and challenge in f.records for f in status.findings)


def test_a_challenge_against_a_candidate_costs_its_author_no_cap():
    history = History()
    history.admit(fact(1), fact(2), fact(3), fact(4))  # A = 4, cap = 1
    history.challenge(fact(9), at=1, by=7)  # fact 9 is a candidate
    history.challenge(fact(1), at=2, by=7)
    folded = derive(history.records, share_percent=SHARE)
    assert folded.cap == 1
    assert folded.status_of(fact(1)).status == "suspended"
    assert folded.status_of(fact(9)).status == "candidate"
    usage = folded.accounts[7]
    assert (len(usage.in_effect), len(usage.queued), usage.dormant) == (1, 0, 1)


def test_a_challenge_filed_while_a_candidate_takes_effect_once_admitted():
    history = History()
    history.challenge(fact(1), at=1, by=7)
    assert status_of(history, fact(1)).status == "candidate"
    history.verdict(fact(1), "admitted", at=2)
    assert status_of(history, fact(1)).status == "suspended"


# --- rule 3: an open evidenced challenge suspends -------------------------------------


def test_an_open_evidenced_challenge_suspends_an_admitted_fact():
    history = History()
    history.admit(fact(1))
    challenge = history.challenge(fact(1), at=1, by=7)
    status = status_of(history, fact(1))
    assert status.status == "suspended"
    assert status.suspended_by == (challenge,)
    assert "Suspended by the open evidenced challenge" in status.explanation
    assert "user7" in status.explanation


def test_an_unevidenced_challenge_changes_nothing():
    history = History()
    history.admit(fact(1))
    challenge = history.challenge(fact(1), at=1, by=7, evidenced=False)
    folded = derive(history.records, share_percent=SHARE)
    status = folded.status_of(fact(1))
    assert status.status == "admitted"
    assert any(f.rule == 3 and challenge in f.records for f in status.findings)
    assert 7 not in folded.accounts  # it uses none of the cap either


# --- rule 4: a refutation resolves exactly the challenge it names --------------------


def test_a_refutation_resolves_only_the_challenge_it_names():
    history = History()
    history.admit(fact(1))
    first = history.challenge(fact(1), at=1, by=7)
    second = history.challenge(fact(1), at=2, by=8)
    history.refute(first, at=3)
    assert status_of(history, fact(1)).suspended_by == (second,)
    history.refute(second, at=4)
    assert status_of(history, fact(1)).status == "admitted"


def test_a_refutation_backfilled_before_its_challenge_still_resolves_it():
    history = History()
    history.admit(fact(1), at=0)
    challenge = history.challenge(fact(1), at=10, by=7)
    history.refute(challenge, at=5)  # inserted_at earlier than the challenge's
    status = status_of(history, fact(1))
    assert status.status == "admitted"
    assert any(f.rule == 4 and challenge in f.records for f in status.findings)


def test_a_second_refutation_changes_nothing():
    once = History()
    once.admit(fact(1))
    challenge = once.challenge(fact(1), at=1, by=7)
    once.refute(challenge, at=2)
    twice = History(records=list(once.records), next_id=once.next_id)
    twice.refute(challenge, at=3)
    assert status_of(twice, fact(1)).status == status_of(once, fact(1)).status == "admitted"


def test_a_steward_who_changes_their_mind_files_a_new_challenge():
    history = History()
    history.admit(fact(1))
    challenge = history.challenge(fact(1), at=1, by=7)
    history.refute(challenge, at=2)
    again = history.challenge(fact(1), at=3, by=1)
    assert status_of(history, fact(1)).suspended_by == (again,)


# --- rule 5: only a refutation closes a challenge -------------------------------------


def test_re_admitting_a_suspended_fact_leaves_it_suspended():
    history = History()
    history.admit(fact(1), at=0)
    history.challenge(fact(1), at=1, by=7)
    history.verdict(fact(1), "admitted", at=2)
    status = status_of(history, fact(1))
    assert status.status == "suspended"
    assert any(f.rule == 5 for f in status.findings)


def test_rejecting_a_suspended_fact_rejects_it():
    # Rule 1 outranks rule 3: the verdict decides first, and only an
    # admitted fact can be suspended.
    history = History()
    history.admit(fact(1), at=0)
    history.challenge(fact(1), at=1, by=7)
    history.verdict(fact(1), "rejected", at=2)
    assert status_of(history, fact(1)).status == "rejected"


# --- rule 6: the flood cap ------------------------------------------------------------


@pytest.mark.parametrize(
    ("admitted", "cap"), [(0, 0), (1, 1), (3, 1), (4, 1), (5, 2), (8, 2), (9, 3), (100, 25)]
)
def test_the_cap_is_a_quarter_of_the_admitted_facts_rounded_up(admitted, cap):
    assert challenge_cap(admitted, 25) == cap


def test_with_eight_admitted_facts_a_third_evidenced_challenge_is_queued():
    history = History()
    history.admit(*(fact(n) for n in range(1, 9)))
    history.challenge(fact(1), at=1, by=7)
    history.challenge(fact(2), at=2, by=7)
    third = history.challenge(fact(3), at=3, by=7)
    folded = derive(history.records, share_percent=SHARE)

    assert (folded.admitted_count, folded.cap) == (8, 2)
    assert [folded.status_of(fact(n)).status for n in (1, 2, 3)] == [
        "suspended",
        "suspended",
        "admitted",
    ]
    queued = folded.status_of(fact(3))
    assert queued.queued == (third,)
    assert "queued beyond the flood cap" in queued.explanation
    assert "user7" in queued.explanation
    assert "the cap is 2 (25% of 8 admitted facts" in queued.explanation
    usage = folded.accounts[7]
    assert (len(usage.in_effect), usage.queued, usage.cap) == (2, (third,), 2)


def test_the_cap_binds_each_account_separately():
    history = History()
    history.admit(*(fact(n) for n in range(1, 9)))
    for n in (1, 2, 3):
        history.challenge(fact(n), at=n, by=7)
    history.challenge(fact(4), at=9, by=8)
    assert statuses(history)[fact(4)] == "suspended"


def test_the_earliest_challenges_take_effect_whatever_the_order_written():
    history = History()
    history.admit(*(fact(n) for n in range(1, 9)))
    history.challenge(fact(3), at=30, by=7)  # written first, dated last
    history.challenge(fact(1), at=10, by=7)
    history.challenge(fact(2), at=20, by=7)
    assert [statuses(history)[fact(n)] for n in (1, 2, 3)] == [
        "suspended",
        "suspended",
        "admitted",
    ]


def test_two_challenges_by_one_account_on_one_fact_count_once():
    history = History()
    history.admit(*(fact(n) for n in range(1, 9)))  # cap 2
    history.challenge(fact(1), at=1, by=7)
    repeat = history.challenge(fact(1), at=2, by=7)
    history.challenge(fact(2), at=3, by=7)
    folded = derive(history.records, share_percent=SHARE)
    assert folded.status_of(fact(2)).status == "suspended"
    assert len(folded.accounts[7].in_effect) == 2
    assert any(repeat in f.records and f.rule == 6 for f in folded.status_of(fact(1)).findings)


def test_refuting_an_effective_challenge_lets_the_queued_one_take_effect():
    history = History()
    history.admit(*(fact(n) for n in range(1, 5)))  # cap 1
    first = history.challenge(fact(1), at=1, by=7)
    history.challenge(fact(2), at=2, by=7)
    assert statuses(history)[fact(2)] == "admitted"
    history.refute(first, at=3)
    assert statuses(history)[fact(2)] == "suspended"


def test_suspensions_never_shrink_the_cap():
    history = History()
    history.admit(*(fact(n) for n in range(1, 6)))  # A = 5, cap 2
    history.challenge(fact(1), at=1, by=7)
    history.challenge(fact(2), at=2, by=8)
    history.challenge(fact(3), at=3, by=9)
    folded = derive(history.records, share_percent=SHARE)
    assert (folded.admitted_count, folded.cap) == (5, 2)


def test_an_empty_store_has_cap_zero():
    folded = derive([], share_percent=SHARE)
    assert (folded.admitted_count, folded.cap) == (0, 0)


def test_the_share_is_a_parameter():
    history = History()
    history.admit(*(fact(n) for n in range(1, 9)))
    for n in (1, 2, 3):
        history.challenge(fact(n), at=n, by=7)
    assert statuses(history, share=50)[fact(3)] == "suspended"
    assert statuses(history, share=0)[fact(1)] == "admitted"


# --- the order of the input never matters ---------------------------------------------


def test_every_shuffle_of_one_history_folds_the_same():
    history = History()
    history.admit(*(fact(n) for n in range(1, 9)))
    first = history.challenge(fact(1), at=1, by=7)
    history.challenge(fact(2), at=1, by=7)  # same minute: ids decide
    history.challenge(fact(3), at=1, by=7)
    history.refute(first, at=0)
    history.verdict(fact(4), "rejected", at=1)
    expected = derive(history.records, share_percent=SHARE)
    shuffler = random.Random(3)
    for _ in range(20):
        records = list(history.records)
        shuffler.shuffle(records)
        assert derive(records, share_percent=SHARE) == expected


TIMES = st.integers(min_value=0, max_value=4)  # few distinct times: many ties


@st.composite
def histories(draw) -> History:
    history = History()
    facts = [fact(n) for n in range(draw(st.integers(1, 6)))]
    ids = iter(draw(st.lists(st.integers(1, 10**9), min_size=40, max_size=40, unique=True)))
    challenges = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["verdict", "challenge", "refutation"]))
        target = draw(st.sampled_from(facts))
        at = draw(TIMES)
        if kind == "verdict":
            verdict = draw(st.sampled_from(["admitted", "rejected"]))
            history.verdict(target, verdict, at=at, id=next(ids))
        elif kind == "challenge":
            author = draw(st.integers(1, 3))
            challenges.append(
                history.challenge(
                    target, at=at, by=author, evidenced=draw(st.booleans()), id=next(ids)
                )
            )
        elif challenges:
            history.refute(draw(st.sampled_from(challenges)), at=at, id=next(ids))
    return history


@settings(max_examples=200, deadline=None)
@given(history=histories(), seed=st.randoms(use_true_random=False))
def test_the_fold_is_independent_of_input_order(history, seed):
    shuffled = list(history.records)
    seed.shuffle(shuffled)
    assert derive(shuffled, share_percent=SHARE) == derive(history.records, share_percent=SHARE)
    assert derive(list(reversed(history.records)), share_percent=SHARE) == derive(
        history.records, share_percent=SHARE
    )
