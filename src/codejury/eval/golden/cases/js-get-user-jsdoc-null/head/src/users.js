import { db } from "./db.js";

export class NotFoundError extends Error {}

/** @typedef {{ id: string, email: string, name: string, createdAt: Date }} User */

function toUser(row) {
  return { id: row.id, email: row.email, name: row.display_name, createdAt: row.created_at };
}

/**
 * Looks up a user by e-mail address (case-insensitive).
 * @param {string} email
 * @returns {Promise<User|null>} the user, or null when no user has this e-mail
 */
export async function findUserByEmail(email) {
  const row = await db.oneOrNone("SELECT * FROM users WHERE lower(email) = lower($1)", [email]);
  return row ? toUser(row) : null;
}

/**
 * Looks up a user by id.
 * @param {string} id
 * @returns {Promise<User|null>} the user, or null when no user has this id
 */
export async function getUserById(id) {
  const row = await db.oneOrNone("SELECT * FROM users WHERE id = $1", [id]);
  if (!row) {
    throw new NotFoundError(`user ${id} not found`);
  }
  return toUser(row);
}
