"""The result cache only saves time: a cache file that cannot be read or written is a
miss, with one warning, never a failed trial (rldse.search.cache)."""

from __future__ import annotations

from rldse.search.cache import ResultCache


def test_an_unusable_cache_file_is_a_miss_with_one_warning(tmp_path, capsys):
    path = tmp_path / "cache.sqlite"
    path.write_text("not a database")  # as a disk that filled mid-write can leave it
    cache = ResultCache(path)
    assert cache.get("trace", "spec", 0) is None
    assert cache.get("trace", "spec", 1) is None
    err = capsys.readouterr().err
    assert err.count("rldse: warning:") == 1 and str(path) in err
    cache.close()


def test_a_full_disk_is_raised_not_passed_over(tmp_path):
    """SQLite's 'database or disk is full' (here a page limit stands for the disk): the
    trial's own records would fail next, so it is the OSError a full disk is."""
    import errno
    from types import SimpleNamespace

    import pytest

    path = tmp_path / "cache.sqlite"
    cache = ResultCache(path)
    cache._conn().execute("PRAGMA max_page_count = 3")
    big = SimpleNamespace(trace_digest="t", spec_digest="s", seed=0,
                          model_dump_json=lambda: "x" * 100_000)
    with pytest.raises(OSError) as err:
        cache.put(big)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(path)
    cache.close()
