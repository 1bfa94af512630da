package main

import (
	"log"
	"net/http"

	"example.com/ledger/internal/api"
	"example.com/ledger/internal/config"
	"example.com/ledger/internal/store"
)

func main() {
	cfg, err := config.Load()
	if err != nil {
		log.Fatalf("config: %v", err)
	}
	db, err := store.OpenPostgres(cfg.DatabaseURL)
	if err != nil {
		log.Fatalf("open database: %v", err)
	}

	srv := &http.Server{Addr: cfg.Addr, Handler: api.Routes(db), ReadTimeout: cfg.ReadTimeout}
	log.Printf("ledger listening on %s", cfg.Addr)
	log.Fatal(srv.ListenAndServe())
}
