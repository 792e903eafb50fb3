"""Test-wide settings.

Hypothesis: no per-example deadline (a loaded 2-core CI machine makes wall-clock deadlines
flaky, and speed lives in benchmarks/, never in tests) and no too-slow health check. Under
CI (``CI=true``) the examples are derived from each test deterministically, so a CI run is
reproducible; locally they stay random so new counterexamples keep being looked for.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", parent=settings.get_profile("default"), derandomize=True, print_blob=True
)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# tests/crosscheck/ reads reference material outside the checkout: only `make crosscheck`
# (which sets VLEDGER_CROSSCHECK) collects it, so `make test` and CI never depend on it.
collect_ignore = [] if os.environ.get("VLEDGER_CROSSCHECK") else ["crosscheck"]
