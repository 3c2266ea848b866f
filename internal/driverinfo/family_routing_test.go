package driverinfo_test

import (
	"testing"

	"github.com/rwpool/rwpool/internal/driverinfo"
	"github.com/rwpool/rwpool/routing"
)

// routing.DialectOf asks FamilyOf: the mapping between the two must hold.
func TestFamilyOfAgreesWithRoutingDialectOf(t *testing.T) {
	want := map[driverinfo.Family]routing.Dialect{
		driverinfo.FamilyOther:    routing.DialectGeneric,
		driverinfo.FamilyPostgres: routing.DialectPostgres,
		driverinfo.FamilyMySQL:    routing.DialectMySQL,
	}
	for _, name := range []string{"postgres", "postgresql", "pgx", "pgx/v5", "cloudsqlpostgres",
		"nrpostgres", "pq", "PQ", "pqx", "cockroach", "CockroachDB", "mysql", "nrmysql", "mariadb",
		"MariaDB", "sqlite3", "sqlserver", "", "ramsql", "clickhouse"} {
		if got, w := routing.DialectOf(name), want[driverinfo.FamilyOf(name)]; got != w {
			t.Errorf("%q: routing.DialectOf = %v, driverinfo.FamilyOf means %v", name, got, w)
		}
	}
}
