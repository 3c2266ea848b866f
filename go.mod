module github.com/rwpool/rwpool

go 1.23

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/DATA-DOG/go-sqlmock v1.5.2 // indirect
	github.com/go-sql-driver/mysql v1.10.1 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/lib/pq v1.12.3 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)
