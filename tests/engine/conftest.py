"""Fixtures of the engine tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.exports import ExportFiles


@pytest.fixture
def files(tmp_path: Path) -> ExportFiles:
    """Export files for this test, its ids made unique to it."""
    return ExportFiles(tmp_path)
