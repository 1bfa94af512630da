"""Publishing reviews on GitLab and GitHub."""
