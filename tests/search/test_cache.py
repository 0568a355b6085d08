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
