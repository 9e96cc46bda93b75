"""A small fully connected network in numpy: logistic regression or an MLP.

The model of the FedAvg baselines. Parameters travel as one flat float64 vector
(:class:`Layout` maps it to layers); a binary problem has one output (sigmoid and
binary cross-entropy, as FLamby's heart-disease baseline), more classes a softmax.
Initialisation follows PyTorch's ``nn.Linear`` default (uniform in ±1/√fan_in), so
FLamby's learning rates mean the same here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray

__all__ = ["Layout", "standardize"]


@dataclass(frozen=True)
class Layout:
    """Layer widths ``(inputs, *hidden, outputs)`` and the flat parameter vector."""

    widths: tuple[int, ...]

    @classmethod
    def of(cls, n_inputs: int, hidden: tuple[int, ...], n_classes: int) -> Layout:
        """One output for two classes (sigmoid), else one per class (softmax)."""
        return cls((n_inputs, *hidden, 1 if n_classes == 2 else n_classes))

    @property
    def size(self) -> int:
        """Number of parameters."""
        w = self.widths
        return sum(a * b + b for a, b in itertools.pairwise(w))

    def unflatten(self, theta: FloatArray) -> list[tuple[FloatArray, FloatArray]]:
        """Return ``[(W, b), ...]`` views of ``theta`` (W of shape (in, out))."""
        layers, start = [], 0
        for a, b in itertools.pairwise(self.widths):
            W = theta[start : start + a * b].reshape(a, b)
            bias = theta[start + a * b : start + a * b + b]
            layers.append((W, bias))
            start += a * b + b
        return layers

    def initial(self, rng: np.random.Generator) -> FloatArray:
        """PyTorch's default: weights and biases uniform in ±1/√fan_in."""
        parts = []
        for a, b in itertools.pairwise(self.widths):
            bound = 1.0 / np.sqrt(a)
            parts.append(rng.uniform(-bound, bound, size=a * b + b))
        return np.concatenate(parts)

    def logits(self, theta: FloatArray, X: FloatArray) -> FloatArray:
        """Forward pass (ReLU hidden layers); shape (n, outputs)."""
        h = X
        layers = self.unflatten(theta)
        for W, b in layers[:-1]:
            h = np.maximum(h @ W + b, 0.0)
        W, b = layers[-1]
        out: FloatArray = h @ W + b
        return out

    def proba(self, theta: FloatArray, X: FloatArray) -> FloatArray:
        """Class probabilities, shape (n, n_classes)."""
        z = self.logits(theta, X)
        if z.shape[1] == 1:
            p = _sigmoid(z[:, 0])
            return np.column_stack([1.0 - p, p])
        return _softmax(z)

    def loss_and_gradient(
        self, theta: FloatArray, X: FloatArray, y: npt.NDArray[np.int64], w: FloatArray
    ) -> tuple[float, FloatArray]:
        """Weighted mean cross-entropy of labels ``y`` and its gradient.

        A batch of zero total weight contributes nothing (loss 0, gradient 0).
        """
        if not w.sum() > 0:
            return 0.0, np.zeros_like(theta)
        layers = self.unflatten(theta)
        activations = [X]
        for W, b in layers[:-1]:
            activations.append(np.maximum(activations[-1] @ W + b, 0.0))
        z = activations[-1] @ layers[-1][0] + layers[-1][1]
        delta, loss = _output_delta(z, y)
        weights = w / w.sum()
        delta *= weights[:, None]
        grads: list[FloatArray] = []
        for i in range(len(layers) - 1, -1, -1):
            grads[:0] = [(activations[i].T @ delta).ravel(), delta.sum(axis=0)]
            if i:
                delta = (delta @ layers[i][0].T) * (activations[i] > 0)
        return float(weights @ loss), np.concatenate(grads)


def _output_delta(
    z: FloatArray, y: npt.NDArray[np.int64]
) -> tuple[FloatArray, FloatArray]:
    """dLoss/dz per row (unweighted) and the per-row loss."""
    if z.shape[1] == 1:
        p = _sigmoid(z[:, 0])
        target = y.astype(np.float64)
        # log(1 + e^z) - y z, computed stably
        loss = np.logaddexp(0.0, z[:, 0]) - target * z[:, 0]
        return (p - target)[:, None], loss
    p = _softmax(z)
    shifted = z - z.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_p[np.arange(z.shape[0]), y]
    p[np.arange(z.shape[0]), y] -= 1.0
    return p, loss


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = np.exp(-np.logaddexp(0.0, -z))
    return out


def _softmax(z: FloatArray) -> FloatArray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    out: FloatArray = e / e.sum(axis=1, keepdims=True)
    return out


def standardize(X: FloatArray, mean: FloatArray, scale: FloatArray) -> FloatArray:
    """Return ``(X - mean) / scale``."""
    out: FloatArray = (X - mean) / scale
    return out
