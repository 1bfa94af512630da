import { stripe } from "../src/billing/stripeClient";

async function main(): Promise<void> {
  const [paymentIntent, amount] = process.argv.slice(2);
  if (!paymentIntent) {
    console.error("usage: refund <payment_intent_id> [amount_cents]");
    process.exit(2);
  }
  const cents = amount === undefined ? undefined : Number.parseInt(amount, 10);
  if (cents !== undefined && !(cents > 0)) {
    console.error(`amount_cents must be a positive integer, got ${amount}`);
    process.exit(2);
  }
  const refund = await stripe.refunds.create({
    payment_intent: paymentIntent,
    ...(cents === undefined ? {} : { amount: cents }),
  });
  console.log(`refund ${refund.id}: ${refund.status}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
