"""The memory store's own pages: the audit feed and entity merges."""

from django.urls import path, re_path

from memories import views

urlpatterns = [
    path("audit/", views.audit, name="audit"),
    re_path(r"^audit/export\.(?P<fmt>csv|jsonl)$", views.audit_export, name="audit-export"),
    path("entities/", views.entities, name="entities"),
    path("entities/merge", views.merge, name="entity-merge"),
    path("entities/merges/<int:merge_id>/undo", views.unmerge, name="entity-unmerge"),
]
