"""The environment variables that open the service's dashboard (``codejury serve`` flags read them too)."""

DASHBOARD_TOKEN_ENV = "CODEJURY_DASHBOARD_TOKEN"
"""A bearer token that opens ``/dashboard``."""
DASHBOARD_USER_HEADER_ENV = "CODEJURY_DASHBOARD_USER_HEADER"
"""The header an authentication proxy sets for a signed-in user."""
DASHBOARD_PUBLIC_ENV = "CODEJURY_DASHBOARD_PUBLIC"
"""``1``: ``/dashboard`` is open to anyone who reaches the service."""
