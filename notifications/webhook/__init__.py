"""The webhook channel: endpoints, signed deliveries by the task worker, their log.

``models`` (Endpoint, Delivery, Attempt), ``signing`` (secrets and the
Standard Webhooks headers), ``addresses`` (which addresses a delivery may
reach), ``sending`` (one HTTP attempt), ``deliveries`` (an attempt recorded,
retried, an endpoint disabled; the task), ``channel`` (``on_events``) and
``actions`` (what the console and ``manage.py webhook`` change).
"""
