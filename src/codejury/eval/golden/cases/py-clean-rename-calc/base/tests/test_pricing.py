import pytest

from shop.pricing import LineItem, calc

ITEMS = [LineItem("mug", 1250, 2), LineItem("tea", 899, 1)]


def test_total_without_discount():
    assert calc(ITEMS) == 3399


def test_discount_rounds_half_up():
    assert calc([LineItem("pen", 150, 1)], discount_percent=5) == 142


def test_discount_out_of_range():
    with pytest.raises(ValueError):
        calc(ITEMS, discount_percent=120)
