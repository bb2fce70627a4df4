"""In-process stand-ins for fast unit tests (never the only test of a path users run)."""
