from django.db import models


class AccountManager(models.Model):
    name = models.CharField(max_length=200)
    email = models.EmailField(unique=True)


class Customer(models.Model):
    name = models.CharField(max_length=200)
    account_manager = models.ForeignKey(AccountManager, on_delete=models.PROTECT, related_name="customers")


class Invoice(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        PAID = "paid"
        VOID = "void"

    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="invoices")
    number = models.CharField(max_length=32, unique=True)
    amount_cents = models.PositiveIntegerField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    due_date = models.DateField(db_index=True)
