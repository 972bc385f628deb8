"""Spark fixtures for the runtime tests (one shared session, see reuse.testing)."""

from __future__ import annotations

from reuse.testing import spark  # noqa: F401 - re-exported fixture
