module github.com/rwpool/rwpool

go 1.24.0

require (
	github.com/DATA-DOG/go-sqlmock v1.5.2
	github.com/go-sql-driver/mysql v1.10.1
	github.com/google/go-cmp v0.7.0
	github.com/lib/pq v1.12.3
	go.uber.org/goleak v1.3.0
)

require filippo.io/edwards25519 v1.2.0 // indirect
