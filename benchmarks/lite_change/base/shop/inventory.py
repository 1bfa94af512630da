"""Inventory: stock levels per product."""

from dataclasses import dataclass


@dataclass
class StockItem:
    sku: str
    on_hand: int
    reserved: int = 0

    @property
    def available(self) -> int:
        """Units that can still be sold."""
        return self.on_hand - self.reserved
