"""The console's pages: queues, conflicts, facts, subjects, audit, automatic changes,
entities, health, search, account."""

from django.urls import path, re_path

from console.views import (
    account,
    audit,
    changes,
    claims,
    conflicts,
    entities,
    facts,
    health,
    queues,
    search,
    webhooks,
    withdrawals,
)

urlpatterns = [
    path("", queues.dashboard, name="dashboard"),
    path("candidates/", queues.candidates_queue, name="candidates"),
    path("challenges/", queues.challenges, name="challenges"),
    path("challenges/<uuid:challenge_id>/refute", facts.refute, name="challenge-refute"),
    path("conflicts/", conflicts.conflicts, name="conflicts"),
    path("conflicts/<uuid:conflict_id>/", conflicts.conflict, name="conflict"),
    path("conflicts/<uuid:conflict_id>/resolve", conflicts.resolve, name="conflict-resolve"),
    path("conflicts/<uuid:conflict_id>/advice", conflicts.advise, name="conflict-advice"),
    path("facts/", facts.facts, name="facts"),
    path("facts/<uuid:fact_id>/", facts.fact, name="fact"),
    path("facts/<uuid:fact_id>/verdict", facts.verdict, name="fact-verdict"),
    path("facts/<uuid:fact_id>/challenge", facts.challenge, name="fact-challenge"),
    path("facts/<uuid:fact_id>/correct", facts.correct, name="fact-correct"),
    path("subjects/<int:entity_id>/", facts.subject, name="subject"),
    re_path(
        r"^(?P<kind>conflict|fact)s/(?P<item_id>[0-9a-f-]{36})/claim$", claims.claim, name="claim"
    ),
    re_path(
        r"^(?P<kind>conflict|fact)s/(?P<item_id>[0-9a-f-]{36})/release$",
        claims.release,
        name="release-claim",
    ),
    path("withdrawals/", withdrawals.withdraw, name="withdraw"),
    path("withdrawals/<uuid:withdrawal_id>/", withdrawals.withdrawal, name="withdrawal"),
    path("audit/", audit.audit, name="audit"),
    re_path(r"^audit/export\.(?P<fmt>csv|jsonl)$", audit.audit_export, name="audit-export"),
    path("changes/", changes.changes, name="changes"),
    path("changes/<int:entry_id>/revert", changes.revert, name="change-revert"),
    path("entities/", entities.entities, name="entities"),
    path("entities/merge", entities.merge, name="entity-merge"),
    path("entities/merges/<int:merge_id>/undo", entities.unmerge, name="entity-unmerge"),
    path("health/", health.health, name="health"),
    path("search/", search.search_page, name="search"),
    path("account/", account.account, name="account"),
    path("account/tokens/", account.issue, name="issue-token"),
    path("account/tokens/<int:token_id>/revoke/", account.revoke, name="revoke-token"),
    path("account/webhooks/", webhooks.add, name="webhook-add"),
    path("account/webhooks/<int:endpoint_id>/", webhooks.endpoint, name="webhook-endpoint"),
    path("account/webhooks/<int:endpoint_id>/rotate/", webhooks.rotate, name="webhook-rotate"),
    path("account/webhooks/<int:endpoint_id>/remove/", webhooks.remove, name="webhook-remove"),
    path("account/webhooks/<int:endpoint_id>/enable/", webhooks.enable, name="webhook-enable"),
    path(
        "account/webhooks/deliveries/<int:delivery_id>/redeliver/",
        webhooks.resend,
        name="webhook-redeliver",
    ),
    path("webhooks/receiver/", webhooks.receiver, name="webhook-receiver"),
]
