"""rlstream grader service."""
