"""rlstream cli service."""
