export type OrderStatus = "placed" | "paid" | "shipped" | "cancelled";

export interface Order {
  id: string;
  customerId: string;
  items: { sku: string; quantity: number }[];
  status: OrderStatus;
  createdAt: Date;
}

export interface OrderRepository {
  insert(order: Order): Promise<void>;
  findById(id: string): Promise<Order | undefined>;
  updateStatus(id: string, status: OrderStatus): Promise<void>;
}
