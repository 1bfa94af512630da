"""``codejury eval``: review quality measured on pull requests with expected review comments."""
