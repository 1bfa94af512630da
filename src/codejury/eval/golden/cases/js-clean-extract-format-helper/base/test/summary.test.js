import { expect, test } from "vitest";

import { lineLabel, totalLabel } from "../src/cart/summary.js";

const lines = [
  { name: "Mug", unitPriceCents: 1250, quantity: 2 },
  { name: "Tea", unitPriceCents: 899, quantity: 1 },
];

test("lineLabel", () => {
  expect(lineLabel(lines[0])).toBe("2 × Mug: €25.00");
});

test("totalLabel", () => {
  expect(totalLabel(lines)).toBe("Total: €33.99");
  expect(totalLabel([])).toBe("Total: €0.00");
});
