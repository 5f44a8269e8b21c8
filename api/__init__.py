"""The agents' faces: the JSON API under /api/v1/ (``api.app``).

``API_PREFIX`` lives here, importable without loading the API itself: the
site's middleware reads it on every request to pass API requests over, and
the API's own error answers (``api.errors``) read it to know their paths.
"""

# Where claimgraph_site.urls mounts the API.
API_PREFIX = "/api/v1/"
