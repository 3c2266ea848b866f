package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gorm starts a cache janitor for every prepared-statement store
		// (dbresolver makes one per pool even with PrepareStmt off) and
		// never stops it: "done channel is never closed" (gorm v1.31,
		// internal/lru). bench's dbresolver variant leaves these behind.
		goleak.IgnoreTopFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1"))
}
