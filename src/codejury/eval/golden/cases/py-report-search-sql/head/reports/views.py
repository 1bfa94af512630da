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



@bp.get("/customers/search")
def search_customers():
    name = request.args.get("name", "").strip()
    if not name:
        abort(400, "name is required")
    limit = min(request.args.get("limit", 50, type=int), 200)
    conn = get_connection()
    rows = conn.execute(
        f"SELECT id, name, email FROM customers WHERE name LIKE '%{name}%' ORDER BY name LIMIT ?",
        (limit,),
    ).fetchall()
    return jsonify([dict(r) for r in rows])
