# frozen_string_literal: true

require "date"

# An invoice issued to a customer. Amounts are integer cents.
class Invoice
  attr_reader :number, :amount_cents, :issued_on, :due_on, :paid_on

  def initialize(number:, amount_cents:, issued_on:, due_on:, paid_on: nil)
    raise ArgumentError, "due_on is before issued_on" if due_on < issued_on

    @number = number
    @amount_cents = amount_cents
    @issued_on = issued_on
    @due_on = due_on
    @paid_on = paid_on
  end

  def paid?
    !paid_on.nil?
  end
end
