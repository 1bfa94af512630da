import { stripe } from "./stripeClient";

export interface ChargeSummary {
  id: string;
  amountCents: number;
  currency: string;
  status: string;
}

/** The most recent charges of a customer, newest first. */
export async function recentCharges(customerId: string, limit = 10): Promise<ChargeSummary[]> {
  const charges = await stripe.charges.list({ customer: customerId, limit });
  return charges.data.map((c) => ({
    id: c.id,
    amountCents: c.amount,
    currency: c.currency,
    status: c.status,
  }));
}
