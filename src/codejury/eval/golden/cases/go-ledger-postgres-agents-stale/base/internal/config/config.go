// Package config reads the ledger's settings from the environment.
package config

import (
	"os"
	"time"
)

type Config struct {
	Addr         string
	DatabasePath string
	ReadTimeout  time.Duration
}

// Load returns the settings, with defaults for anything unset.
func Load() Config {
	return Config{
		Addr:         getenv("LEDGER_ADDR", ":8080"),
		DatabasePath: getenv("LEDGER_DB_PATH", "ledger.db"),
		ReadTimeout:  10 * time.Second,
	}
}

func getenv(key, fallback string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return fallback
}
