"""Django's PostgreSQL backend for the embedded server (see ``base``)."""
