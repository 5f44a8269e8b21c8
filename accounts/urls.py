from django.urls import path

from accounts import views

urlpatterns = [
    path("", views.account, name="account"),
    path("tokens/", views.issue, name="issue-token"),
    path("tokens/<int:token_id>/revoke/", views.revoke, name="revoke-token"),
]
