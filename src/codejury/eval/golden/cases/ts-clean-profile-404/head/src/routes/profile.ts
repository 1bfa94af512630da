import type { Request, Response } from "express";

import type { UserStore } from "../users/store";

/** GET /profiles/:id: the public part of a user's profile; 404 when there is no such user. */
export function profileHandler(users: UserStore) {
  return async (req: Request, res: Response): Promise<void> => {
    const user = await users.findById(req.params.id);
    if (!user) {
      res.status(404).json({ error: "user not found" });
      return;
    }
    res.json({
      id: user.id,
      name: user.displayName,
      joined: user.createdAt.toISOString(),
    });
  };
}
