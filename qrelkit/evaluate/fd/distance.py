"""Fréchet distance (FD) between embedding samples, and FD@k of a run (seeds 000/001, Eq. 4).

    FD = ‖μ₁−μ₂‖² + Tr Σ₁ + Tr Σ₂ − 2·Tr (Σ₁^½ Σ₂ Σ₁^½)^½

with Σ the sample covariance (n−1), in float64. The trace term is the nuclear norm of A₁A₂ᵀ for
factors Σᵢ = AᵢᵀAᵢ, from the eigenvalues of a symmetric PSD matrix clamped at 0, never from
`scipy.linalg.sqrtm` of the non-symmetric Σ₁Σ₂ (which pytorch-fid and clean-fid use, and which
turns complex or NaN on rank-deficient input). A small sample (n ≤ d) keeps its own centred rows
as its factor, so it is exact although Σ is singular; a large one uses a d×d factor (Cholesky, or
Λ^½Vᵀ from its eigenvectors). docs/fd.md ("How qrelkit computes it") derives the identity.

Nothing here embeds anything: callers pass vectors (see `qrelkit.embed`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qrelkit.errors import QrelkitError


@dataclass(frozen=True)
class FrechetResult:
    """An FD with the sizes that qualify it: n items on each side, d dimensions, covariance ranks."""

    value: float
    n1: int
    n2: int
    d: int
    rank1: int
    rank2: int

    @property
    def rank_deficient(self) -> bool:
        return self.rank1 < self.d or self.rank2 < self.d

    def __float__(self) -> float:
        return self.value

    def describe(self) -> str:
        note = "; rank-deficient covariance (rank < d), FD still exact" if self.rank_deficient else ""
        return f"FD = {self.value:.6g} (n1={self.n1}, n2={self.n2}, d={self.d}, ranks {self.rank1}/{self.rank2}{note})"


@dataclass(frozen=True)
class CovarianceFactor:
    """A sample's mean and a factor A with Σ = AᵀA, plus Tr Σ, n and rank."""

    mean: np.ndarray  # (d,)
    rows: np.ndarray  # (r, d)
    trace: float
    n: int
    rank: int


def _rank(eigenvalues: np.ndarray, size: int) -> int:
    # Eigenvalues of a Gram/covariance matrix are squared singular values; numpy's matrix_rank
    # cut-off (σ_max·size·eps) is below the noise of a computed eigenvalue, so cut at λ_max·size·eps.
    if eigenvalues.size == 0:
        return 0
    top = float(eigenvalues.max())
    return int(np.sum(eigenvalues > top * size * np.finfo(np.float64).eps)) if top > 0 else 0


def factor_from_covariance(mean: np.ndarray, cov: np.ndarray, n: int = 0) -> CovarianceFactor:
    """A d×d (or thinner) factor of a given covariance: Cholesky, or eigenvectors when Σ is singular."""
    cov = np.asarray(cov, dtype=np.float64)
    cov = (cov + cov.T) / 2
    d = cov.shape[0]
    eigenvalues = np.linalg.eigvalsh(cov)
    rank = _rank(eigenvalues, d)
    try:
        rows = np.linalg.cholesky(cov).T if rank == d else None
    except np.linalg.LinAlgError:
        rows = None
    if rows is None:
        values, vectors = np.linalg.eigh(cov)
        keep = values > 0  # clamp: a negative eigenvalue of a PSD matrix is rounding
        rows = np.sqrt(values[keep])[:, None] * vectors[:, keep].T
    return CovarianceFactor(np.asarray(mean, dtype=np.float64), rows, float(np.trace(cov)), n, rank)


def factor_from_samples(x: np.ndarray) -> CovarianceFactor:
    """Mean and covariance factor of a sample (rows = items), in float64."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise QrelkitError(f"a Fréchet distance needs at least 2 items per side as an (n, d) array; got shape {x.shape}")
    n, d = x.shape
    mean = x.mean(axis=0)
    centred = (x - mean) / np.sqrt(n - 1)
    if n - 1 <= d:  # the sample's own space is the smaller one (rank ≤ n−1)
        rank = _rank(np.linalg.eigvalsh(centred @ centred.T), max(n, d))
        return CovarianceFactor(mean, centred, float(np.sum(centred * centred)), n, rank)
    return factor_from_covariance(mean, centred.T @ centred, n)


def sum_sqrt_eigenvalues(gram: np.ndarray) -> float:
    """Σ √λ over the eigenvalues of a symmetric PSD matrix, with rounding noise set to 0.

    Eigenvalues below λ_max·size·eps are zero up to rounding (negative ones always are); their
    square roots (~1e-8·√λ_max each) would otherwise add noise, not signal, to the trace term.
    """
    if gram.size == 0:
        return 0.0
    eigenvalues = np.linalg.eigvalsh(gram)
    cut = max(float(eigenvalues[-1]), 0.0) * gram.shape[0] * np.finfo(np.float64).eps
    return float(np.sum(np.sqrt(eigenvalues[eigenvalues > cut])))


def trace_sqrt_product(a1: np.ndarray, a2: np.ndarray) -> float:
    """Tr (Σ₁^½ Σ₂ Σ₁^½)^½ for Σᵢ = aᵢᵀaᵢ: Σ √λ of the smaller Gram matrix of K = a₁a₂ᵀ (see module doc)."""
    k = a1 @ a2.T
    return sum_sqrt_eigenvalues(k @ k.T if k.shape[0] <= k.shape[1] else k.T @ k)


def frechet_from_factors(f1: CovarianceFactor, f2: CovarianceFactor) -> float:
    diff = f1.mean - f2.mean
    value = float(diff @ diff) + f1.trace + f2.trace - 2.0 * trace_sqrt_product(f1.rows, f2.rows)
    # FD is a squared Wasserstein-2 distance, so ≥ 0; a value just below 0 is rounding.
    return max(value, 0.0)


def frechet_distance(x: np.ndarray, y: np.ndarray) -> FrechetResult:
    """FD between two samples of embeddings, (n₁, d) and (n₂, d); any n ≥ 2, also n < d."""
    f1, f2 = factor_from_samples(x), factor_from_samples(y)
    if f1.mean.shape != f2.mean.shape:
        raise QrelkitError(f"samples of different dimension: {f1.mean.shape[0]} vs {f2.mean.shape[0]}")
    d = f1.mean.shape[0]
    return FrechetResult(frechet_from_factors(f1, f2), f1.n, f2.n, d, f1.rank, f2.rank)


def frechet_distance_from_stats(
    mean1: np.ndarray, cov1: np.ndarray, mean2: np.ndarray, cov2: np.ndarray, *, n1: int = 0, n2: int = 0
) -> FrechetResult:
    """FD from precomputed means and covariances (n₁, n₂ only reported; 0 when unknown)."""
    f1 = factor_from_covariance(mean1, cov1, n1)
    f2 = factor_from_covariance(mean2, cov2, n2)
    return FrechetResult(frechet_from_factors(f1, f2), n1, n2, f1.mean.shape[0], f1.rank, f2.rank)
