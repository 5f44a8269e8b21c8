from django.urls import path

from memories import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
