"""Deployables: each subpackage is one service; they talk only through events."""
