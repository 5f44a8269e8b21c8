"""The demo data and accounts for `make run`: above both domain apps, as it writes through both."""
