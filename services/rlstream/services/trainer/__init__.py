"""rlstream trainer service."""
