"""The admissions pages of the console (candidates, challenges, verdicts)."""

urlpatterns: list = []
