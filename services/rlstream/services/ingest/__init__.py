"""rlstream ingest service."""
