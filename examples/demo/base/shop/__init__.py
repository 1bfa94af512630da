"""shop: orders, products and customers."""
