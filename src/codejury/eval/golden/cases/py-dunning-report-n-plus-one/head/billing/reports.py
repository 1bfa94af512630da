"""Finance reports, run nightly by the `billing_reports` management command."""

from __future__ import annotations

import datetime as dt

from django.db.models import QuerySet, Sum

from billing.models import AccountManager, Customer, Invoice


def overdue_invoices(today: dt.date) -> QuerySet[Invoice]:
    """Open invoices past their due date, oldest first."""
    return Invoice.objects.filter(status=Invoice.Status.OPEN, due_date__lt=today).order_by("due_date")


def overdue_total_cents(today: dt.date) -> int:
    """Sum of the open amounts past their due date."""
    return overdue_invoices(today).aggregate(total=Sum("amount_cents"))["total"] or 0



def overdue_by_manager(today: dt.date) -> dict[str, list[dict[str, object]]]:
    """Overdue invoices grouped by account manager e-mail, for the weekly dunning e-mails."""
    grouped: dict[str, list[dict[str, object]]] = {}
    for invoice in overdue_invoices(today):
        customer = Customer.objects.get(pk=invoice.customer_id)
        manager = AccountManager.objects.get(pk=customer.account_manager_id)
        grouped.setdefault(manager.email, []).append(
            {
                "number": invoice.number,
                "customer": customer.name,
                "amount_cents": invoice.amount_cents,
                "due_date": invoice.due_date.isoformat(),
            }
        )
    return grouped
