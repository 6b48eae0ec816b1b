"""Uncertainty for every aggregate: seeded percentile bootstrap CIs and paired comparisons.

All functions take plain sequences of floats where NaN/None means "not computable" (excluded from
the mean but visible through ``coverage = n_scored / n_total``). Failures must already be 0 in the
input (the runner writes them so): nothing here turns a failure into a missing value.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class MeanCI:
    """Mean of the scored values with its bootstrap CI; ``coverage`` = n_scored / n_total."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n_total: int
    n_scored: int

    @property
    def coverage(self) -> float | None:
        return self.n_scored / self.n_total if self.n_total else None

    def as_dict(self) -> dict:
        return {**asdict(self), "coverage": self.coverage}


@dataclass(frozen=True)
class PairedComparison:
    """B - A on the questions both scored: mean difference, paired-bootstrap CI, sign-flip p-value."""

    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_pairs: int

    def as_dict(self) -> dict:
        return asdict(self)


def _clean(values: Sequence[float | None]) -> tuple[np.ndarray, int]:
    if isinstance(values, np.ndarray):
        arr = values.astype(float, copy=False)
    else:
        arr = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
    return arr[~np.isnan(arr)], len(arr)


def _bootstrap_means(x: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    out = np.empty(n_boot)
    for start, idx in _resample_blocks(len(x), n_boot, seed):
        out[start:start + len(idx)] = x[idx].mean(axis=1)
    return out


@functools.lru_cache(maxsize=16)
def _resample_blocks(n: int, n_boot: int, seed: int) -> tuple[tuple[int, np.ndarray], ...]:
    """The resampled index rows for ``n`` values, as (first row, block) pairs. They depend only on
    (n, n_boot, seed), and a leaderboard bootstraps every metric of every configuration over the same
    questions, so they are drawn once and shared (read-only). Blocks keep 1,000 questions x 10,000
    resamples from needing 80 MB at once."""
    rng = np.random.default_rng(seed)
    blocks = []
    block = max(1, 2_000_000 // max(n, 1))
    for start in range(0, n_boot, block):
        idx = rng.integers(0, n, size=(min(block, n_boot - start), n), dtype=np.int32)
        idx.flags.writeable = False
        blocks.append((start, idx))
    return tuple(blocks)


def _sign_flip_extremes(d: np.ndarray, observed: float, n_perm: int, rng: np.random.Generator) -> int:
    """How many of ``n_perm`` random sign flips give ``|mean(s * d)| >= observed``.

    Signs come from random bits (8 per random byte): with s = 2b - 1, sum(s * d) = 2 (b . d) - sum(d).
    b . d is summed a byte at a time: for byte position j a 256-entry table holds the sum of d over the
    bits set in each byte value, so a permutation costs n/8 table look-ups instead of unpacking n bits to
    floats and a matrix product (which made this the statistics asset's hot spot). Same random bytes, so
    the same flips as before; the sums differ from the matrix product's only by rounding (~1e-15), far
    inside the 1e-12 tie tolerance, so the counts are the same."""
    n = len(d)
    total = float(d.sum())
    n_bytes = (n + 7) // 8
    padded = np.zeros(n_bytes * 8)
    padded[:n] = d
    # tables[j, v] = sum of padded[8j + k] over the bits k set in v (bit 0 = the most significant, as unpackbits)
    tables = padded.reshape(n_bytes, 8) @ _BYTE_BITS.T
    flat, offsets = tables.ravel(), np.arange(n_bytes, dtype=np.intp) * 256
    extreme = 0
    block = max(1, 2_000_000 // n)
    for start in range(0, n_perm, block):
        rows = min(block, n_perm - start)
        random_bytes = rng.integers(0, 256, size=(rows, n_bytes), dtype=np.uint8)
        sums = flat[random_bytes + offsets].sum(axis=1)
        means = np.abs((2.0 * sums - total) / n)
        # small tolerance so floating noise on exact ties does not flip a count
        extreme += int(np.sum(means >= observed - 1e-12))
    return extreme


# row v: the 8 bits of byte value v, most significant first (np.unpackbits' order)
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)


def bootstrap_ci(values: Sequence[float | None], *, n_boot: int = 2000, confidence: float = 0.95,
                 seed: int = 0) -> MeanCI:
    """Mean and percentile bootstrap CI of the non-missing values (seeded: same input, same CI).

    One value gives a degenerate CI [v, v]; no value gives None everywhere (coverage 0).
    """
    x, n_total = _clean(values)
    if len(x) == 0:
        return MeanCI(None, None, None, n_total, 0)
    mean = float(x.mean())
    if len(x) == 1 or np.all(x == x[0]):
        return MeanCI(mean, mean, mean, n_total, len(x))
    boots = _bootstrap_means(x, n_boot, seed)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return MeanCI(mean, float(lo), float(hi), n_total, len(x))


def paired_comparison(a: Sequence[float | None], b: Sequence[float | None], *, n_boot: int = 2000,
                      n_perm: int = 10000, confidence: float = 0.95, seed: int = 0) -> PairedComparison:
    """Compare configuration B with A on the SAME questions (aligned sequences).

    Pairs where either side is missing are dropped (count in ``n_pairs``). The difference is
    ``mean(b - a)``; its CI is a percentile bootstrap over pairs; the p-value is a two-sided
    sign-flip permutation test: under H0 (no difference) each pair's sign is exchangeable, so
    p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + n_perm). Identical configs give d = 0 and p = 1.
    """
    if len(a) != len(b):
        raise ValueError(f"paired comparison needs aligned sequences, got {len(a)} and {len(b)}")
    arr_a = np.array([np.nan if v is None else float(v) for v in a], dtype=float)
    arr_b = np.array([np.nan if v is None else float(v) for v in b], dtype=float)
    keep = ~(np.isnan(arr_a) | np.isnan(arr_b))
    d = arr_b[keep] - arr_a[keep]
    n = len(d)
    if n == 0:
        return PairedComparison(None, None, None, None, 0)
    obs = float(d.mean())
    if np.all(d == 0):
        return PairedComparison(0.0, 0.0, 0.0, 1.0, n)
    rng = np.random.default_rng(seed)
    ci = bootstrap_ci(d, n_boot=n_boot, confidence=confidence, seed=seed)
    extreme = _sign_flip_extremes(d, abs(obs), n_perm, rng)
    p = (1 + extreme) / (1 + n_perm)
    return PairedComparison(obs, ci.ci_low, ci.ci_high, min(1.0, p), n)
