"""The agents' faces: the JSON API under /api/v1/ (``api.app``)."""
