import pytest

from shop.pricing import LineItem, order_total_cents

ITEMS = [LineItem("mug", 1250, 2), LineItem("tea", 899, 1)]


def test_total_without_discount():
    assert order_total_cents(ITEMS) == 3399


def test_discount_rounds_half_up():
    assert order_total_cents([LineItem("pen", 150, 1)], discount_percent=5) == 142


def test_discount_out_of_range():
    with pytest.raises(ValueError):
        order_total_cents(ITEMS, discount_percent=120)
