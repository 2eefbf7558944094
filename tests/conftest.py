"""Shared test settings: small configs, and compiled programs reused across tests."""

from __future__ import annotations

import os

# Keep XLA from grabbing both cores' worth of threads per test process is not
# needed; but make float behaviour deterministic and quiet.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
