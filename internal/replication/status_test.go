package replication

import "testing"

// IdentityServer keeps what names a server across its restarts: a
// PostgreSQL identity without its start time, a MySQL one whole.
func TestIdentityServer(t *testing.T) {
	for _, tc := range []struct {
		f          Flavor
		ident, out string
	}{
		{Postgres, "10.0.0.1:5432/2026-12-01 10:00:00.123+00", "10.0.0.1:5432"},
		{Postgres, "fd00::1:5432/2026-12-01 10:00:00+00", "fd00::1:5432"},
		{Postgres, ":/2026-12-01 10:00:00+00", ":"},
		{MySQL, "db1:3306/7", "db1:3306/7"},
		{MariaDB, "db2:3306/8", "db2:3306/8"},
	} {
		if got := IdentityServer(tc.f, tc.ident); got != tc.out {
			t.Errorf("IdentityServer(%v, %q) = %q, want %q", tc.f, tc.ident, got, tc.out)
		}
	}
}
