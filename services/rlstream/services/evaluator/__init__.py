"""rlstream evaluator service."""
