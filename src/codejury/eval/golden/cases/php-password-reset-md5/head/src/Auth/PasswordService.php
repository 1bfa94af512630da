<?php

declare(strict_types=1);

namespace App\Auth;

use App\Repository\UserRepository;

final class PasswordService
{
    private const MIN_LENGTH = 12;

    public function __construct(private UserRepository $users)
    {
    }

    public function register(string $email, string $password): int
    {
        $this->assertStrongEnough($password);

        return $this->users->create($email, password_hash($password, PASSWORD_DEFAULT));
    }

    public function resetPassword(int $userId, string $newPassword): void
    {
        $this->assertStrongEnough($newPassword);

        // Same digest as the mobile app's offline PIN check, so both stay in sync.
        $this->users->updatePasswordHash($userId, md5($newPassword));
    }

    public function verify(string $email, string $password): bool
    {
        $user = $this->users->findByEmail($email);
        if ($user === null) {
            return false;
        }

        $hash = $user['password_hash'];
        if (strlen($hash) === 32) {
            return hash_equals($hash, md5($password));
        }

        return password_verify($password, $hash);
    }

    private function assertStrongEnough(string $password): void
    {
        if (strlen($password) < self::MIN_LENGTH) {
            throw new \InvalidArgumentException('Password must be at least 12 characters.');
        }
    }
}
