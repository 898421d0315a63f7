"""How amounts are written in messages and `place`: as resource.Quantity prints them
(k8s.io/apimachinery pkg/api/resource quantity.go ``String``/``CanonicalizeBytes``: a value
parsed with a binary suffix keeps the largest binary suffix that divides it)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpudrv_check.model.pending import amount_text


@pytest.mark.parametrize(
    ("resource", "amount", "text"),
    [
        ("memory", Fraction(512 << 30), "512Gi"),
        ("memory", Fraction(1536 << 20), "1536Mi"),
        ("memory", Fraction(1000), "1000"),
        ("ephemeral-storage", Fraction(100 << 30), "100Gi"),
        ("hugepages-2Mi", Fraction(2 << 20), "2Mi"),
        ("nvidia.com/gpu", Fraction(1024), "1024"),
        ("pods", Fraction(110), "110"),
        ("cpu", Fraction(1, 2), "500m"),
        ("cpu", Fraction(4), "4"),
        ("memory", Fraction(0), "0"),
    ],
)
def test_amount_text(resource: str, amount: Fraction, text: str):
    assert amount_text(resource, amount) == text
