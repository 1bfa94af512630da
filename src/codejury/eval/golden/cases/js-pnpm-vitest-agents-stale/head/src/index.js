/**
 * Turns a title into a URL slug: lower case, ASCII letters and digits joined by single dashes.
 * Accents are removed ("Crème brûlée" becomes "creme-brulee").
 * @param {string} title
 * @returns {string} the slug, or "" when the title has no letters or digits
 */
export function slugify(title) {
  return title
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}
