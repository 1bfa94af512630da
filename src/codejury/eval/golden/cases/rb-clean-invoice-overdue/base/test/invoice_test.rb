# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/invoice"

class InvoiceTest < Minitest::Test
  def invoice(paid_on: nil)
    Invoice.new(number: "2026-0042", amount_cents: 12_000, issued_on: Date.new(2026, 3, 1),
                due_on: Date.new(2026, 3, 31), paid_on: paid_on)
  end

  def test_paid
    refute_predicate invoice, :paid?
    assert_predicate invoice(paid_on: Date.new(2026, 3, 10)), :paid?
  end

  def test_due_before_issue_is_rejected
    assert_raises(ArgumentError) do
      Invoice.new(number: "x", amount_cents: 1, issued_on: Date.new(2026, 3, 2), due_on: Date.new(2026, 3, 1))
    end
  end
end
