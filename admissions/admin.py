"""Django admin for admission records: visible and searchable, never editable.

The database refuses UPDATE and DELETE on the record table anyway; the admin
does not offer them, so nobody is shown a button that can only fail. Records
are written through ``admissions.actions`` (the console and the API), where
the rules of SPEC §6 and the audit feed apply.
"""

from django.contrib import admin

from admissions.models import Record
from memories.admin import ReadOnlyAdmin


@admin.register(Record)
class RecordAdmin(ReadOnlyAdmin):
    list_display = ["inserted_at", "role", "verdict", "fact", "author", "scope", "evidenced"]
    list_filter = ["role", "verdict", "scope"]
    search_fields = ["id", "ground", "fact__id", "author__username", "fact__subject__name"]
    list_select_related = [
        "fact__subject",
        "fact__predicate",
        "fact__object_ref",
        "author",
        "scope",
    ]
    date_hierarchy = "inserted_at"
    ordering = ["-inserted_at", "-id"]
    fields = [
        "id",
        "scope",
        "fact",
        "role",
        "verdict",
        "ground",
        "evidence",
        "challenge",
        "author",
        "inserted_at",
    ]
    readonly_fields = fields
    actions = None

    @admin.display(boolean=True)
    def evidenced(self, record: Record) -> bool:
        return record.evidenced
