"""HTTP handlers of the reporting service (read-only, behind the admin SSO)."""

from __future__ import annotations

from flask import Blueprint, abort, jsonify, request

from reports.db import get_connection

bp = Blueprint("reports", __name__, url_prefix="/reports")


@bp.get("/customers/<int:customer_id>")
def customer_detail(customer_id: int):
    conn = get_connection()
    row = conn.execute(
        "SELECT id, name, email, created_at FROM customers WHERE id = ?",
        (customer_id,),
    ).fetchone()
    if row is None:
        abort(404)
    return jsonify(dict(row))


@bp.get("/revenue")
def revenue_by_month():
    year = request.args.get("year", type=int)
    if year is None:
        abort(400, "year is required")
    conn = get_connection()
    rows = conn.execute(
        "SELECT strftime('%m', paid_at) AS month, SUM(amount_cents) AS total_cents "
        "FROM payments WHERE strftime('%Y', paid_at) = ? GROUP BY month ORDER BY month",
        (str(year),),
    ).fetchall()
    return jsonify([dict(r) for r in rows])
