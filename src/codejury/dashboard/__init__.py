"""The dashboard: one self-contained HTML page (inline CSS and SVG, no script, no network) from the store.

``render_dashboard(store, since=, repository=)`` renders the page ``codejury dashboard`` writes and a
review service serves: the stats tables as charts over time and the recent reviews, each opening its
full review; ``render_review_page(store, uid)`` renders one review on a page of its own. Kept light:
the CLI imports ``codejury.dashboard.command`` at start-up, which imports nothing heavy until it runs.
"""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
)
"""The pages' policy: no script and no request anywhere, only their inline CSS and ``data:`` images (the
pages' ``<meta>`` tag; a review service sends it as a header too)."""
