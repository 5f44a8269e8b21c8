"""Migrations that load an app's SQL files, so today's definition lives in the app.

Where SQL must state a rule (a hot-path function, a trigger, a view), its
current text is kept in ``<app>/sql/<name>.sql`` and written so that running
it again replaces what is there (``CREATE OR REPLACE``, or ``DROP … IF EXISTS``
then ``CREATE``). Changing a definition is editing that file and adding a
migration whose operation is ``RunSQLFile(app, name)``; older migrations stay
as they are, as history.

A file is read when its migration runs, so a migration replays the file's
*current* text, not the text it had when the migration was written. On a
database migrated from zero that text could need tables or columns that a
later migration adds, so only the app's *last* migration that loads a file
runs it: the earlier ones do nothing, and the file runs once, on the schema it
was written for. A database that already ran an earlier loader runs the
newest one when it gets there, as usual.

Going backwards does nothing: the text a definition had before cannot be
recovered from the file, and the current definition keeps working on the
older schema (the migrations that created an object drop it on their way
back, by name).
"""

from pathlib import Path
from typing import Any

from django.apps import apps
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations.base import Operation


class RunSQLFile(Operation):
    """Run ``<app>/sql/<name>`` (its current text) unless a later migration of the app does."""

    reduces_to_sql = True
    reversible = True

    def __init__(self, app_label: str, name: str) -> None:
        self.app_label = app_label
        self.name = name

    @property
    def path(self) -> Path:
        return Path(apps.get_app_config(self.app_label).path) / "sql" / self.name

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass  # SQL functions, triggers and views are not part of Django's model state

    def database_forwards(self, app_label: str, schema_editor, from_state, to_state) -> None:
        if self._loaded_again_later():
            return
        schema_editor.execute(self.path.read_text(encoding="utf-8"), params=None)

    def database_backwards(self, app_label: str, schema_editor, from_state, to_state) -> None:
        pass  # see the module's docstring

    def describe(self) -> str:
        return f"Load {self.app_label}/sql/{self.name}"

    @property
    def migration_name_fragment(self) -> str:
        return f"sql_{Path(self.name).stem}"

    def _loaded_again_later(self) -> bool:
        """Whether a migration after the one holding this operation loads the same file."""
        # The migration files alone, without the database's record of what ran.
        graph = MigrationLoader(None, ignore_no_migrations=True).graph
        loaders = [
            key
            for key, migration in graph.nodes.items()
            if key[0] == self.app_label
            and any(
                isinstance(op, RunSQLFile)
                and (op.app_label, op.name) == (self.app_label, self.name)
                for op in migration.operations
            )
        ]
        # The loader module is imported once per process, so the executing
        # migration's operations are these very objects.
        mine = [key for key in loaders if any(op is self for op in graph.nodes[key].operations)]
        if not mine:
            return False
        return any(key != mine[0] and mine[0] in graph.forwards_plan(key) for key in loaders)
