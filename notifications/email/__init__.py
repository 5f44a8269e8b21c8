"""The email channel: a digest per person of what waits for them, and what happened to them.

``models`` (preferences and subscriptions), ``schedule`` (pure: when a digest
is due), ``contents`` (what a digest lists, read from the queues as they stand),
``sending`` (render, send, record; the channel and the periodic job),
``unsubscribe`` (the signed one-click link). docs/notifications.md, "Email digest".
"""
