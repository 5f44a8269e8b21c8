"""Django's PostgreSQL backend, bringing the embedded server back when it has gone away.

Used only when ``DATABASE_URL`` is unset (``embedded_db.database_settings``
selects it). If the embedded PostgreSQL was stopped or killed while the app
runs, the first new connection that fails starts it again (under the start
lock, so concurrent requests start it once) and is tried once more. With a
server named by ``DATABASE_URL`` the plain backend is used: restarting a
real server is its operator's job.
"""

from pathlib import Path
from typing import Any

from django.db.backends.postgresql import base as postgresql

from claimgraph_site.lib import embedded_db


class DatabaseWrapper(postgresql.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        try:
            return super().get_new_connection(conn_params)
        except self.Database.OperationalError as error:
            server = embedded_db.EmbeddedServer.at(Path(self.settings_dict["EMBEDDED_VAR_DIR"]))
            # A server that answers refused for another reason (a missing
            # database, no free slot): starting it cannot help.
            if embedded_db.accepts_connections(server):
                raise
            try:
                embedded_db.ensure_running(server)
            except embedded_db.EmbeddedDatabaseError as failure:
                # Still a database error to Django (and to the outage answer).
                raise error from failure
            return super().get_new_connection(conn_params)
