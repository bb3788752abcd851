"""Chat-platform bots (Discord, Slack) on top of :class:`omoide.Memory`.

They are thin: each handler parses the platform's event, calls ``Memory`` and renders
the result; every behaviour lives in the library. Their extras (``omoide[discord]``,
``omoide[slack]``) are imported only by the bot modules themselves.
"""
