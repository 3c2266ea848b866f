package dsn_test

import (
	"fmt"

	"github.com/rwpool/rwpool/dsn"
)

func ExampleParse() {
	cfg, err := dsn.Parse(`
		driver=postgres;
		primary='host=db1 user=app password=s3cret dbname=shop';
		replica='host=db2 user=app password=s3cret dbname=shop' weight=3;
		replica='host=db3 user=app password=s3cret dbname=shop' weight=0 name=spare;
		pool_size=50;
		acquire_timeout=2s`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Driver, cfg.PoolSize, cfg.AcquireTimeout, cfg.MinIdle)
	fmt.Println(cfg.Primary)
	for _, r := range cfg.Replicas {
		fmt.Println(r.Name, r.Weight, r.Role)
	}
	fmt.Println(cfg) // redacted
	// Output:
	// postgres 50 2s 0
	// primary (host=db1 user=app password=*** dbname=shop)
	// replica1 3 replica
	// spare 0 replica
	// driver=postgres;primary='host=db1 user=app password=*** dbname=shop';replica='host=db2 user=app password=*** dbname=shop' weight=3;replica='host=db3 user=app password=*** dbname=shop' weight=0 name=spare;pool_size=50;acquire_timeout=2s
}

func ExampleParse_error() {
	_, err := dsn.Parse("driver=postgres;primary='host=db1';pool_sise=50")
	fmt.Println(err)
	// Output:
	// rwpool: dsn: pool_sise: unknown key (did you mean "pool_size"?) at offset 35
}

func ExampleRedact() {
	fmt.Println(dsn.Redact("postgres://app:s3cret@db1:5432/shop?sslmode=disable"))
	fmt.Println(dsn.Redact("app:p@ss:w0rd@tcp(db1:3306)/shop?parseTime=true"))
	fmt.Println(dsn.Redact("host=db1 user=app password='s3 cret' dbname=shop"))
	fmt.Println(dsn.Redact("postgres://db1/shop?user=app&password=s3cret"))
	// Output:
	// postgres://app:***@db1:5432/shop?sslmode=disable
	// app:***@tcp(db1:3306)/shop?parseTime=true
	// host=db1 user=app password=*** dbname=shop
	// postgres://db1/shop?user=app&password=***
}

func ExampleNewConfig() {
	cfg := dsn.NewConfig() // every default; never a dsn.Config literal
	cfg.Driver = "postgres"
	cfg.Primary.DSN = "host=db1"
	cfg.Replicas = []dsn.Node{{DSN: "host=db2", Weight: 1}}
	cfg.PoolSize = 20
	if err := cfg.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range cfg.Nodes() {
		fmt.Println(n.Name, n.Role, n.Weight)
	}
	fmt.Println(cfg.FormatDSN())
	// Output:
	// primary primary 1
	// replica1 replica 1
	// driver=postgres;primary='host=db1';replica='host=db2';pool_size=20
}

func ExampleConfig_Validate() {
	// A literal leaves out the defaults: Breaker false would turn the
	// circuit breaker off, MaxWaiters 0 would fail every wait for a
	// connection. Validate refuses it.
	cfg := &dsn.Config{Driver: "postgres", Primary: dsn.Node{DSN: "host=db1"}, PoolSize: 20}
	fmt.Println(cfg.Validate())
	// Output:
	// rwpool: dsn: Config not made by dsn.NewConfig or dsn.Parse: start from dsn.NewConfig(), which holds the defaults (in a literal, zero values are settings, not defaults: breaker off, max_waiters 0, ...)
}
