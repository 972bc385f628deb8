from __future__ import annotations

from reuse.testing import (
    mqtt_broker,  # noqa: F401 - re-exported fixture
    spark,  # noqa: F401 - re-exported fixture
)
