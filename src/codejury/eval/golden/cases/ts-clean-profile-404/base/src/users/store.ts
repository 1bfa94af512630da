export interface User {
  id: string;
  displayName: string;
  email: string;
  createdAt: Date;
}

export interface UserStore {
  /** The user with this id, or undefined when there is none (deleted users included). */
  findById(id: string): Promise<User | undefined>;
}
