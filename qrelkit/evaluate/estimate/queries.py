"""Estimators for a sample of whole queries: prediction-powered inference over per-query values.

The labelled units are queries: on a sampled query the humans' per-query value y_q is known
exactly, the judge's f_q on every query. With lambda the power-tuning weight,

    theta = lambda * mean_all(f) + mean_sampled(y - lambda * f)

(lambda = 0: the human sample alone; 1: PPI; tuned: PPI++). Two variances:

- ``iid`` (ppi_py's, `ppi_mean_ci`): the labelled and the unlabelled values are independent draws
  from a population, var = std(y - lambda f)^2 / n + lambda^2 std(f_all)^2 / N (numpy's std,
  ddof 0), a normal interval, and ppi_py's tuned lambda (clipped to [0, 1]);
- ``finite``: the estimand is the mean over exactly these Q queries (what full human qrels of
  this collection would give) and the sample is a simple random sample of them: the judge's mean
  over all of them is then fixed, and var = (1 - n/Q) s^2(y - lambda f) / n (ddof 1), with the
  lambda that minimises it, s(y, f) / s^2(f), clipped to [0, 1].

Arrays may carry leading axes (draws, runs); the last axis is the queries.
"""

from __future__ import annotations

import numpy as np


def ppi_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> np.ndarray:
    """ppi_py's power-tuning lambda for a mean (`_calc_lam_glm` with clip=True): cov(y, yhat)
    (ddof 0) over (1 + n/N) var(yhat and yhat_unlabeled pooled) (ddof 1), clipped to [0, 1]."""
    n, big_n = y.shape[-1], yhat_unlabeled.shape[-1]
    covariance = ((y - y.mean(-1, keepdims=True)) * (yhat - yhat.mean(-1, keepdims=True))).mean(-1)
    pooled = np.concatenate([yhat, yhat_unlabeled], axis=-1)
    spread = pooled.var(axis=-1, ddof=1)
    return np.clip(covariance / ((1.0 + n / big_n) * spread), 0.0, 1.0)


def ppi_mean(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, lam: float | np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(estimate, standard error) as ppi_py's `ppi_mean_pointestimate` / `ppi_mean_ci` make them
    (lam None: tuned). The interval is estimate -/+ z_(1 - alpha/2) * standard error."""
    lam = ppi_lambda(y, yhat, yhat_unlabeled) if lam is None else np.asarray(lam, dtype=np.float64)
    lam_e = lam[..., None] if np.ndim(lam) else lam
    estimate = (lam_e * yhat_unlabeled).mean(-1) + (y - lam_e * yhat).mean(-1)
    imputed = (lam_e * yhat_unlabeled).std(-1) / np.sqrt(yhat_unlabeled.shape[-1])
    rectifier = (y - lam_e * yhat).std(-1) / np.sqrt(y.shape[-1])
    return estimate, np.sqrt(imputed**2 + rectifier**2)


def finite_lambda(y: np.ndarray, yhat: np.ndarray) -> np.ndarray:
    """The lambda minimising (1 - n/Q) s^2(y - lambda yhat) / n: s(y, yhat) / s^2(yhat), in [0, 1]."""
    centred = yhat - yhat.mean(-1, keepdims=True)
    spread = (centred**2).sum(-1)
    covariance = ((y - y.mean(-1, keepdims=True)) * centred).sum(-1)
    return np.clip(np.where(spread > 0, covariance / np.where(spread > 0, spread, 1.0), 0.0), 0.0, 1.0)


def query_estimates(
    human: np.ndarray, judge: np.ndarray, chosen: np.ndarray, estimator: str, variance: str = "finite"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per draw and run: (estimate (D, R), covariance (D, R, R), lambda (D, R)).
    ``human`` (D or 1, R, Q) per-query values under human labels (read on chosen queries only);
    ``judge`` (R, Q) under the judge's; ``chosen`` (D, Q) the sampled queries (n per draw)."""
    n_queries = judge.shape[-1]
    count = int(chosen[0].sum())
    order = np.argsort(~chosen, axis=-1, kind="stable")[:, :count]  # (D, n) the chosen queries
    y = np.take_along_axis(np.broadcast_to(human, (chosen.shape[0],) + judge.shape), order[:, None, :], axis=-1)
    f = judge[:, order].transpose(1, 0, 2)  # (D, R, n)
    f_all = np.broadcast_to(judge, y.shape[:-1] + (n_queries,))
    if estimator == "judge":
        return f_all.mean(-1), np.zeros(y.shape[:-1] + (y.shape[-2],)), np.ones(y.shape[:-1])
    if estimator == "human":
        lam = np.zeros(y.shape[:-1])
    elif estimator == "ppi":
        lam = np.ones(y.shape[:-1])
    elif variance == "iid":
        lam = ppi_lambda(y, f, f_all)
    else:
        lam = finite_lambda(y, f)
    residual = y - lam[..., None] * f
    estimate, _ = ppi_mean(y, f, f_all, lam)  # its standard errors are the diagonal of the covariance below
    rc = residual - residual.mean(-1, keepdims=True)
    if variance == "iid":
        imputed = lam[..., None] * (f_all - f_all.mean(-1, keepdims=True))
        covariance = np.matmul(rc, np.swapaxes(rc, -1, -2)) / count**2 + np.matmul(imputed, np.swapaxes(imputed, -1, -2)) / n_queries**2
    else:
        covariance = (1.0 - count / n_queries) * np.matmul(rc, np.swapaxes(rc, -1, -2)) / (count * max(count - 1, 1))
    return estimate, covariance, lam
