package driverinfo

import "strings"

// Family is the SQL dialect a driver speaks, as far as its registered name
// tells.
type Family uint8

// The dialect families.
const (
	// FamilyOther is a driver rwpool knows nothing particular about.
	FamilyOther Family = iota
	// FamilyPostgres is PostgreSQL and servers speaking its dialect
	// (CockroachDB).
	FamilyPostgres
	// FamilyMySQL is MySQL and MariaDB.
	FamilyMySQL
)

// Name fragments that give a driver's family away: a registered name
// containing one of them, in any ASCII case, speaks that dialect
// ("postgres", "postgresql", "pgx", "pgx/v5", "cloudsqlpostgres",
// "nrpostgres", "mysql", "nrmysql", ...). The name "pq" alone, which some
// programs register lib/pq under, is PostgreSQL too.
var (
	postgresFragments = []string{"postgres", "pgx", "cockroach"}
	mysqlFragments    = []string{"mysql", "mariadb"}
)

const pqAlias = "pq"

// FamilyOf returns the dialect family of the driver registered as name.
func FamilyOf(name string) Family {
	lower := strings.ToLower(name)
	if lower == pqAlias || containsAny(lower, postgresFragments) {
		return FamilyPostgres
	}
	if containsAny(lower, mysqlFragments) {
		return FamilyMySQL
	}
	return FamilyOther
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
