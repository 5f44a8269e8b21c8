"""The console pages that show admission status (see ``admissions.views``)."""

from django.urls import path

from admissions.views import conflicts, facts, queues

urlpatterns = [
    path("", queues.dashboard, name="dashboard"),
    path("candidates/", queues.candidates_queue, name="candidates"),
    path("challenges/", queues.challenges, name="challenges"),
    path("challenges/<uuid:challenge_id>/refute", facts.refute, name="challenge-refute"),
    path("conflicts/", conflicts.conflicts, name="conflicts"),
    path("conflicts/<uuid:conflict_id>/", conflicts.conflict, name="conflict"),
    path("conflicts/<uuid:conflict_id>/resolve", conflicts.resolve, name="conflict-resolve"),
    path("facts/", facts.facts, name="facts"),
    path("facts/<uuid:fact_id>/", facts.fact, name="fact"),
    path("facts/<uuid:fact_id>/verdict", facts.verdict, name="fact-verdict"),
    path("facts/<uuid:fact_id>/challenge", facts.challenge, name="fact-challenge"),
    path("facts/<uuid:fact_id>/correct", facts.correct, name="fact-correct"),
    path("subjects/<int:entity_id>/", facts.subject, name="subject"),
]
