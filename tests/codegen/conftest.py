"""Fixtures shared by the generator's tests."""
import pytest


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A private, empty module cache, so planted generators never meet the real one."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    return tmp_path
