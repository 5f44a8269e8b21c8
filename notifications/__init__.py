"""Telling people that work waits: events read off the domain, sent by channel.

This app stands above ``admissions`` and ``memories``: it reads their records
(the audit feed, the queues) and no domain code calls it, so a write never
waits on a delivery. One subpackage per channel (``webhook``, ``email``), as
healthchecks lays out its integrations.
"""
