"""Change sets: sources (git, diff file), diff parsing, the noise filter and the risk tier."""
