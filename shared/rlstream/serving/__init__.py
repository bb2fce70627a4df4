"""Serving a model over an OpenAI-compatible chat-completions API (``rlstream serve``).

The pure parts live here (request/response shapes, tool-call parsing, the conversation
record a served exchange is logged as); the HTTP server and model loading are in
``rlstream.services.serve``.
"""
