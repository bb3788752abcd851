"""Local HTTP servers that speak the providers' wire formats, for tests of the real SDKs."""

from omoide.providers import RetryPolicy

from .scripted import SSE, Recorded, Reply, ScriptedServer, closed_port_url

# millisecond backoff so retry tests stay fast; Retry-After hints up to 1 s are honoured
FAST_RETRY = RetryPolicy(max_retries=3, initial_wait=0.001, max_wait=0.005, max_retry_after=1.0)
NO_RETRY = RetryPolicy(max_retries=0)

__all__ = ["FAST_RETRY", "NO_RETRY", "SSE", "Recorded", "Reply", "ScriptedServer", "closed_port_url"]
