"""Mounts the apps' pages and APIs; no domain code lives here."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from api.app import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path(
        "signin/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("signout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", api.urls),
    path("", include("console.urls")),
]

# Django's answers to a request refused before any view (a bad Host header) or
# failing outside one: JSON under /api/v1/, the console's styled pages elsewhere.
handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler404 = "api.errors.page_not_found"
handler500 = "api.errors.server_error_page"
