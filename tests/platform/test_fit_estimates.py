"""The estimate fitter (loadtests/fit_estimates.py) on synthetic data, without self-play."""

import ast

import numpy as np

from loadtests.fit_estimates import as_constants, fit, log_loss, predict


def _synthetic(w: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), gen.normal(size=(n, len(w) - 1))])
    y = (gen.random(n) < 1 / (1 + np.exp(-x @ w))).astype(float)
    return x, y


def test_fit_recovers_known_weights() -> None:
    true = np.array([-0.5, 1.2, -0.8, 0.3, 0.0])
    x, y = _synthetic(true, 40_000, seed=1)
    w = fit(x, y)
    # Standard error is about 0.015 per weight at n=40,000; the L2 of 1e-3 shrinks by <0.2%.
    assert np.max(np.abs(w - true)) < 0.08
    # And it beats the base rate on fresh data from the same model.
    xt, yt = _synthetic(true, 20_000, seed=2)
    assert log_loss(predict(w, xt), yt) < log_loss(np.full(len(yt), y.mean()), yt) - 0.05


def test_fit_is_a_minimum_of_the_penalised_loss() -> None:
    x, y = _synthetic(np.array([0.4, -1.0, 0.7]), 5_000, seed=3)
    l2 = 1e-3
    w = fit(x, y, l2=l2)
    p = predict(w, x)
    grad = x.T @ (p - y) / len(y) + l2 * w
    assert np.max(np.abs(grad)) < 1e-9


def test_constants_are_printed_as_bots_py_holds_them() -> None:
    w = np.array([0.12345, -1.0, 2.5, 0.0004])
    text = as_constants(w, (("A", 0, 3), ("B", 3, 4)))
    assert text == "A = (0.123, -1.0, 2.5)\nB = (0.0,)"
    long = as_constants(np.arange(30) / 7, (("LONG", 0, 30),))
    assert all(len(line) <= 100 for line in long.splitlines())
    assert ast.literal_eval(long.split(" = ", 1)[1]) == tuple(round(v / 7, 3) for v in range(30))
