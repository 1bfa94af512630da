/** Labels for the cart sidebar. Prices are integer euro cents. */

export function lineLabel(line) {
  const cents = line.unitPriceCents * line.quantity;
  return `${line.quantity} × ${line.name}: €${(cents / 100).toFixed(2)}`;
}

export function totalLabel(lines) {
  const cents = lines.reduce((sum, line) => sum + line.unitPriceCents * line.quantity, 0);
  return `Total: €${(cents / 100).toFixed(2)}`;
}
