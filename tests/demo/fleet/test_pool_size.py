"""The test hosts' pool size: parsed from --pool-size / POZOL_FLEET_POOL_SIZE, refused
when it is not a size; a running host is never silently left at another size."""

from __future__ import annotations

import os

import pytest

from apps.demo.fleet.fleet import _check_pool_sizes
from apps.demo.fleet.model import Layout
from apps.demo.fleet.settings import FleetError, parse_pool_size, resolve_config


@pytest.mark.parametrize(("text", "size"), [
    ("1073741824", 1 << 30), ("4G", 4 << 30), ("4g", 4 << 30), ("512M", 512 << 20),
    ("65536K", 64 << 20), ("1T", 1 << 40), (" 2G ", 2 << 30), (128 << 20, 128 << 20),
])
def test_sizes_in_bytes_or_with_a_suffix(text, size):
    assert parse_pool_size(text) == size


@pytest.mark.parametrize("text", [
    "", "G", "4X", "4GB", "1.5G", "-1G", "4 G", "0", "63M", "1e9", "4G;rm", "0x40000000", True,
])
def test_nonsense_is_refused_with_a_reason(text):
    with pytest.raises(FleetError, match="pool size"):
        parse_pool_size(text)


def test_the_environment_sets_it_and_the_argument_wins(monkeypatch, tmp_path):
    assert resolve_config(tmp_path).pool_size is None  # not asked for: the default
    monkeypatch.setenv("POZOL_FLEET_POOL_SIZE", "2G")
    assert resolve_config(tmp_path).pool_size == 2 << 30
    assert resolve_config(tmp_path, pool_size="256M").pool_size == 256 << 20
    monkeypatch.setenv("POZOL_FLEET_POOL_SIZE", "lots")
    with pytest.raises(FleetError, match="'lots'"):
        resolve_config(tmp_path)


def test_a_running_host_with_another_size_is_refused_not_resized(tmp_path):
    layout = Layout(tmp_path / "host1")
    layout.root.mkdir()
    layout.disk.write_bytes(b"")
    os.truncate(layout.disk, 1 << 30)
    _check_pool_sizes(resolve_config(tmp_path), [layout])  # not asked for: fine
    _check_pool_sizes(resolve_config(tmp_path, pool_size="1G"), [layout])
    with pytest.raises(FleetError, match="host1 is up with a 1073741824-byte pool.*run down"):
        _check_pool_sizes(resolve_config(tmp_path, pool_size="4G"), [layout])
