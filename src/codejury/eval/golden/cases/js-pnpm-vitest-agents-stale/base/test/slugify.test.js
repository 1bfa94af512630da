import { describe, expect, it } from "@jest/globals";

import { slugify } from "../src/index.js";

describe("slugify", () => {
  it("joins words with dashes", () => {
    expect(slugify("Hello, World!")).toBe("hello-world");
  });

  it("removes accents", () => {
    expect(slugify("Crème brûlée")).toBe("creme-brulee");
  });

  it("returns an empty string when nothing is left", () => {
    expect(slugify("!!!")).toBe("");
  });
});
