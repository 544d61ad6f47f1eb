"""The monthly bill of a request mix (benchmarks/bill.py), checked by hand at S3 Standard's list prices."""

from __future__ import annotations

import pytest

from benchmarks.bill import monthly_bill


def test_a_mix_at_one_batch_every_ten_seconds() -> None:
    # per batch: 4 PUTs and a LIST (write class), 2 HEADs and a GET (read class), 3 DELETEs (free)
    bill = monthly_bill({"PutObject": 4, "ListObjectsV2": 1, "HeadObject": 2, "GetObject": 1, "DeleteObject": 3})
    assert bill.batches == 259_200
    assert bill.requests == {"write": 5 * 259_200, "read": 3 * 259_200, "free": 3 * 259_200}
    assert bill.usd["write"] == pytest.approx(1_296_000 / 1000 * 0.005)  # $6.48
    assert bill.usd["read"] == pytest.approx(777_600 / 1000 * 0.0004)  # $0.31104
    assert bill.usd["free"] == 0
    assert bill.total_usd == pytest.approx(6.79104)
    assert bill.total_requests == 11 * 259_200


def test_the_interval_scales_the_bill_and_unknown_operations_are_named() -> None:
    assert monthly_bill({"PutObject": 1}, batch_interval_s=60).total_usd == pytest.approx(43_200 / 1000 * 0.005)
    with pytest.raises(ValueError, match="SelectObjectContent"):
        monthly_bill({"SelectObjectContent": 1})
    with pytest.raises(ValueError, match="positive"):
        monthly_bill({"PutObject": 1}, batch_interval_s=0)


def test_express_list_prices_price_the_same_mix_lower() -> None:
    from benchmarks.bill import EXPRESS_PRICE_PER_1000_USD, PRICE_LISTS

    mix = {"PutObject": 4, "ListObjectsV2": 1, "HeadObject": 2, "GetObject": 1, "DeleteObject": 3}
    bill = monthly_bill(mix, prices=EXPRESS_PRICE_PER_1000_USD)
    assert bill.requests == monthly_bill(mix).requests  # the price list changes the dollars, not the counts
    assert bill.usd["write"] == pytest.approx(1_296_000 / 1000 * 0.00113)  # $1.46448
    assert bill.usd["read"] == pytest.approx(777_600 / 1000 * 0.00003)  # $0.023328
    assert bill.total_usd == pytest.approx(1.487808)
    assert PRICE_LISTS["S3 Standard"] is not PRICE_LISTS["S3 Express One Zone"]
