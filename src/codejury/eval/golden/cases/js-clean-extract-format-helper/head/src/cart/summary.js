/** Labels for the cart sidebar. Prices are integer euro cents. */

function lineCents(line) {
  return line.unitPriceCents * line.quantity;
}

function formatEuros(cents) {
  return `€${(cents / 100).toFixed(2)}`;
}

export function lineLabel(line) {
  return `${line.quantity} × ${line.name}: ${formatEuros(lineCents(line))}`;
}

export function totalLabel(lines) {
  const cents = lines.reduce((sum, line) => sum + lineCents(line), 0);
  return `Total: ${formatEuros(cents)}`;
}
