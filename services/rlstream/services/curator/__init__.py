"""rlstream curator service."""
