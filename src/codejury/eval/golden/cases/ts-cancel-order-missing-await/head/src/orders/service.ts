import { randomUUID } from "node:crypto";

import { ConflictError, NotFoundError, ValidationError } from "../errors";
import type { EventBus } from "../events";
import type { Order, OrderRepository } from "./repository";

export class OrderService {
  constructor(
    private readonly repo: OrderRepository,
    private readonly events: EventBus,
  ) {}

  async place(customerId: string, items: Order["items"]): Promise<Order> {
    if (items.length === 0) {
      throw new ValidationError("an order needs at least one item");
    }
    const order: Order = { id: randomUUID(), customerId, items, status: "placed", createdAt: new Date() };
    await this.repo.insert(order);
    await this.events.publish("order.placed", { orderId: order.id, customerId });
    return order;
  }

  async markPaid(orderId: string): Promise<void> {
    const order = await this.repo.findById(orderId);
    if (!order) {
      throw new NotFoundError(`order ${orderId} not found`);
    }
    if (order.status !== "placed") {
      throw new ConflictError(`order ${orderId} is ${order.status}, not placed`);
    }
    await this.repo.updateStatus(orderId, "paid");
    await this.events.publish("order.paid", { orderId, customerId: order.customerId });
  }

  async cancel(orderId: string): Promise<void> {
    const order = await this.repo.findById(orderId);
    if (!order) {
      throw new NotFoundError(`order ${orderId} not found`);
    }
    if (order.status === "cancelled") {
      return;
    }
    if (order.status === "shipped") {
      throw new ConflictError(`order ${orderId} has shipped and cannot be cancelled`);
    }
    this.repo.updateStatus(orderId, "cancelled");
    await this.events.publish("order.cancelled", { orderId, customerId: order.customerId });
  }
}
