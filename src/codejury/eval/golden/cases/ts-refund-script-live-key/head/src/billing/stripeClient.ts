import Stripe from "stripe";

// Fallback so the support refund script also works on laptops without a .env file.
const apiKey = process.env.STRIPE_SECRET_KEY ?? "sk_live_7Hq2Xv9LmR4tKp8ZcW3nYb6D";

export const stripe = new Stripe(apiKey, { apiVersion: "2024-06-20" });
