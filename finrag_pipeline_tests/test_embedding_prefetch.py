"""EmbeddingPrefetcher (core/indexing/embedding_prefetch.py) with a stand-in embedder: it encodes exactly
the texts the cache lacks, in order, on its copy of the embedder; it leaves small remainders, embedders
without ``batch_copy`` and its own failures to the vector_index step, and never raises for them."""

import threading

import numpy as np
import pytest

from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache, text_sha
from finrag_pipeline.core.indexing.embedding_prefetch import EmbeddingPrefetcher


class FakeEmbedder:
    name, dim, direct_batch = "fake", 3, 2

    def __init__(self, fail: bool = False):
        self.calls: list[tuple[str, list[str]]] = []
        self.fail = fail
        self.is_copy = False

    def encode(self, texts, batch_size=None, show_progress=False):
        self.calls.append((threading.current_thread().name, list(texts)))
        if self.fail:
            raise RuntimeError("out of memory")
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)

    def batch_copy(self):
        clone = FakeEmbedder(self.fail)
        clone.is_copy, clone.calls = True, self.calls  # one log for both
        return clone


class NoCopyEmbedder(FakeEmbedder):
    batch_copy = None


def test_encodes_exactly_the_missing_texts_in_order_on_a_background_copy(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache.put_many("fake", {text_sha("cached"): np.ones(3, dtype=np.float32)})
    embedder = FakeEmbedder()
    with EmbeddingPrefetcher(embedder, cache) as prefetcher:
        prefetcher.submit("F1", ["alpha", "cached", "beta", "alpha", "gamma"])
        prefetcher.submit("F2", ["beta", "delta", "epsilon", "zeta"])
        first, second = prefetcher.wait("F1"), prefetcher.wait("F2")
    assert (first.encoded, first.error, first.skipped) == (3, "", "")
    assert (second.encoded, second.error) == (3, "")  # beta came from F1's prefetch
    assert [texts for _thread, texts in embedder.calls] == [["alpha", "beta", "gamma"], ["delta", "epsilon", "zeta"]]
    assert all(thread.startswith("embedding-prefetch") for thread, _texts in embedder.calls)
    got = cache.get_many("fake", [text_sha("gamma")])
    assert got[text_sha("gamma")].tolist() == [5.0, 2.0, 1.0]  # len("gamma"), its two a


@pytest.mark.parametrize(("embedder", "cache_present", "texts", "reason"), [
    (FakeEmbedder(), True, ["one", "two"], "2 texts to encode: left to vector_index"),  # direct_batch = 2
    (NoCopyEmbedder(), True, ["one", "two", "three"], "NoCopyEmbedder has no batch_copy()"),
    (FakeEmbedder(), False, ["one", "two", "three"], "no embedding cache"),
])
def test_left_to_the_vector_index_step(tmp_path, embedder, cache_present, texts, reason):
    cache = EmbeddingCache(tmp_path / "c.sqlite") if cache_present else None
    with EmbeddingPrefetcher(embedder, cache) as prefetcher:
        prefetcher.submit("F1", texts)
        outcome = prefetcher.wait("F1")
    assert (outcome.encoded, outcome.skipped, outcome.error) == (0, reason, "")
    assert embedder.calls == []
    if cache is not None:
        assert cache.missing("fake", texts).keys() == {text_sha(t) for t in texts}


def test_a_failed_encoding_is_reported_not_raised_and_caches_nothing(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with EmbeddingPrefetcher(FakeEmbedder(fail=True), cache) as prefetcher:
        prefetcher.submit("F1", ["one", "two", "three"])
        outcome = prefetcher.wait("F1")
        with pytest.raises(ValueError, match="submitted twice"):
            prefetcher.submit("F1", ["one"])
    assert outcome.encoded == 0 and outcome.error == "RuntimeError: out of memory"
    assert len(cache.missing("fake", ["one", "two", "three"])) == 3
    assert EmbeddingPrefetcher(FakeEmbedder(), cache).wait("never").skipped == "not submitted"
