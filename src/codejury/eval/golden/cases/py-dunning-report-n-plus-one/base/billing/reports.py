"""Finance reports, run nightly by the `billing_reports` management command."""

from __future__ import annotations

import datetime as dt

from django.db.models import QuerySet, Sum

from billing.models import Invoice


def overdue_invoices(today: dt.date) -> QuerySet[Invoice]:
    """Open invoices past their due date, oldest first."""
    return Invoice.objects.filter(status=Invoice.Status.OPEN, due_date__lt=today).order_by("due_date")


def overdue_total_cents(today: dt.date) -> int:
    """Sum of the open amounts past their due date."""
    return overdue_invoices(today).aggregate(total=Sum("amount_cents"))["total"] or 0
