// Package config reads the ledger's settings from the environment.
package config

import (
	"errors"
	"os"
	"time"
)

type Config struct {
	Addr        string
	DatabaseURL string
	ReadTimeout time.Duration
}

// Load returns the settings, with defaults for anything optional.
func Load() (Config, error) {
	dbURL := os.Getenv("LEDGER_DATABASE_URL")
	if dbURL == "" {
		return Config{}, errors.New("LEDGER_DATABASE_URL is not set (postgres://user:pass@host/db)")
	}
	return Config{
		Addr:        getenv("LEDGER_ADDR", ":8080"),
		DatabaseURL: dbURL,
		ReadTimeout: 10 * time.Second,
	}, nil
}

func getenv(key, fallback string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return fallback
}
