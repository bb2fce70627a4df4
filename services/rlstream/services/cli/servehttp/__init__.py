"""``rlstream serve``: an OpenAI-compatible chat-completions server (docs/serve.md)."""
