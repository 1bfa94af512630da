"""Inventory: stock levels per product, reservations and restocking."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class StockItem:
    sku: str
    on_hand: int
    reserved: int = 0

    @property
    def available(self) -> int:
        """Units that can still be sold."""
        return self.on_hand - self.reserved


@dataclass
class Reservation:
    sku: str
    qty: int
    created_at: float = field(default_factory=time.time)


class OutOfStock(Exception):
    """Raised when a reservation asks for more than is available."""


class Inventory:
    """Stock items by SKU with reservations that expire."""

    def __init__(self, ttl_s: float = 900.0) -> None:
        self.items: dict[str, StockItem] = {}
        self.reservations: list[Reservation] = []
        self.ttl_s = ttl_s

    def add(self, sku: str, qty: int) -> StockItem:
        """Add ``qty`` units of ``sku`` to stock and return the item."""
        item = self.items.setdefault(sku, StockItem(sku, 0))
        item.on_hand += qty
        return item

    def reserve(self, sku: str, qty: int) -> Reservation:
        """Reserve ``qty`` units; raises OutOfStock when not enough are available."""
        item = self.items[sku]
        if qty > item.available:
            raise OutOfStock(f"{sku}: {qty} requested, {item.available} available")
        item.reserved += qty
        reservation = Reservation(sku, qty)
        self.reservations.append(reservation)
        return reservation

    def release(self, reservation: Reservation) -> None:
        """Give reserved units back to stock."""
        self.items[reservation.sku].reserved -= reservation.qty
        self.reservations.remove(reservation)

    def commit(self, reservation: Reservation) -> None:
        """Turn a reservation into a sale: the units leave the stock."""
        item = self.items[reservation.sku]
        item.on_hand -= reservation.qty
        item.reserved -= reservation.qty

    def expire(self, now: float | None = None) -> int:
        """Release reservations older than the TTL and return how many were released."""
        now = now or time.time()
        expired = [r for r in self.reservations if now - r.created_at > self.ttl_s]
        for r in expired:
            self.release(r)
        return len(expired)

    def low_stock(self, threshold: int = 5) -> list[str]:
        """SKUs whose available units are below ``threshold``, sorted."""
        low = []
        for sku in self.items:
            for item in self.items.values():
                if item.sku == sku and item.available < threshold:
                    low.append(sku)
        return sorted(low)

    def restock_plan(self, target: int = 20) -> dict[str, int]:
        """Units to order per SKU so that every SKU reaches ``target`` available units."""
        plan = {}
        for sku in self.low_stock(target):
            plan[sku] = target - self.items[sku].available
        return plan

    def summary(self) -> dict[str, int]:
        """Totals across all SKUs: units on hand, reserved and available."""
        on_hand = sum(i.on_hand for i in self.items.values())
        reserved = sum(i.reserved for i in self.items.values())
        return {
            "skus": len(self.items),
            "on_hand": on_hand,
            "reserved": reserved,
            "available": on_hand - reserved,
            "open_reservations": len(self.reservations),
        }
