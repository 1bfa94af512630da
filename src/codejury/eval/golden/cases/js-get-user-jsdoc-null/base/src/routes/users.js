import { Router } from "express";

import { findUserByEmail } from "../users.js";

export const router = Router();

router.get("/users/lookup", async (req, res, next) => {
  try {
    const user = await findUserByEmail(String(req.query.email ?? ""));
    if (!user) {
      res.status(404).json({ error: "no user with this e-mail" });
      return;
    }
    res.json(user);
  } catch (err) {
    next(err);
  }
});
