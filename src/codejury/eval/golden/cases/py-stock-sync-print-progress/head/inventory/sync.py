"""Nightly stock sync from the warehouse API into the catalogue."""

from __future__ import annotations

from inventory.catalogue import Catalogue
from inventory.log import get_logger
from inventory.warehouse import WarehouseClient

log = get_logger(__name__)

BATCH_SIZE = 500


def sync_stock(client: WarehouseClient, catalogue: Catalogue) -> int:
    """Copy the stock level of every SKU in the catalogue; returns how many were updated."""
    skus = catalogue.all_skus()
    updated = 0
    for start in range(0, len(skus), BATCH_SIZE):
        batch = skus[start : start + BATCH_SIZE]
        levels = client.stock_levels(batch)
        missing = sorted(set(batch) - levels.keys())
        if missing:
            log.warning("warehouse has no stock level", extra={"count": len(missing), "sample": missing[:5]})
        updated += catalogue.set_stock(levels)
        print(f"stock sync: {start + len(batch)}/{len(skus)} SKUs done, {updated} updated")
    log.info("stock sync finished", extra={"skus": len(skus), "updated": updated})
    return updated
