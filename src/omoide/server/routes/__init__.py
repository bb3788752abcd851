"""The HTTP API's routes, one module per area; each only parses, calls ``Memory`` and renders."""
