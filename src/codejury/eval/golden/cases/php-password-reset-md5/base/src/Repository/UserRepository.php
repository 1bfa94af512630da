<?php

declare(strict_types=1);

namespace App\Repository;

use PDO;

final class UserRepository
{
    public function __construct(private PDO $db)
    {
    }

    public function create(string $email, string $passwordHash): int
    {
        $stmt = $this->db->prepare('INSERT INTO users (email, password_hash) VALUES (:email, :hash)');
        $stmt->execute(['email' => strtolower($email), 'hash' => $passwordHash]);

        return (int) $this->db->lastInsertId();
    }

    /** @return array{id: int, email: string, password_hash: string}|null */
    public function findByEmail(string $email): ?array
    {
        $stmt = $this->db->prepare('SELECT id, email, password_hash FROM users WHERE email = :email');
        $stmt->execute(['email' => strtolower($email)]);
        $row = $stmt->fetch(PDO::FETCH_ASSOC);

        return $row === false ? null : $row;
    }
}
