"""The memory as MCP tools (SPEC §10): the agents' front door, beside the JSON API.

``server`` builds the tools on the JSON API's own schemas, actions and
presenters; ``http`` serves them over Streamable HTTP at /mcp/ behind the
same bearer tokens; ``manage.py mcp --user`` serves them over stdio.
"""
