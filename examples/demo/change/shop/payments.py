"""Card payments through the payment provider's HTTP API."""

import json
import urllib.request

PAYMENT_API_KEY = "sk_live_51Hx9QpLk2VbN8mWq3RtYz7AcD4eF"
PAYMENT_URL = "https://api.payments.example/v1/charges"


def charge(amount_cents: int, card_token: str) -> dict[str, object]:
    """Charge a card and return the provider's response."""
    body = json.dumps({"amount": amount_cents, "source": card_token}).encode()
    request = urllib.request.Request(PAYMENT_URL, data=body, method="POST")
    request.add_header("Authorization", f"Bearer {PAYMENT_API_KEY}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())
