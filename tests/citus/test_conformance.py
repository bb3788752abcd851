"""The store conformance suites, run against the 3-node Citus cluster.

The tests are the ones in ``tests/conformance`` (imported, so there is one contract); the
``store`` fixture of ``tests/citus/conftest.py`` hands them a store on the cluster.
"""

from conformance.test_api_key_store import *  # noqa: F403
from conformance.test_knowledge_store import *  # noqa: F403
from conformance.test_memory_store import *  # noqa: F403
from conformance.test_search_store import *  # noqa: F403
from conformance.test_session_store import *  # noqa: F403
from conformance.test_summary_store import *  # noqa: F403
