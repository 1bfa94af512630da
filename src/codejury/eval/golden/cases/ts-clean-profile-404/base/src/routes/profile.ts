import type { Request, Response } from "express";

import type { UserStore } from "../users/store";

/** GET /profiles/:id: the public part of a user's profile. */
export function profileHandler(users: UserStore) {
  return async (req: Request, res: Response): Promise<void> => {
    const user = await users.findById(req.params.id);
    res.json({
      id: user!.id,
      name: user!.displayName,
      joined: user!.createdAt.toISOString(),
    });
  };
}
