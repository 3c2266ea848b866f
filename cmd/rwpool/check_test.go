package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// testCluster is one of the replicated clusters scripts/cluster.sh
// describes in RWPOOL_* variables (see the root module's cluster_test.go).
type testCluster struct {
	name     string
	drivers  []string // database/sql drivers to check it with
	primary  string   // host:port
	replicas []string
	nodeDSN  func(user, pw, addr string) string
}

// clusters returns the test clusters of the environment. Without them the
// test skips, except under CI=true, where it fails: CI must never pass by
// not testing.
func clusters(t *testing.T) (user, pw string, cls []testCluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	user, pw, db := os.Getenv("RWPOOL_DB_USER"), os.Getenv("RWPOOL_DB_PASSWORD"), os.Getenv("RWPOOL_DB_NAME")
	pg, my := os.Getenv("RWPOOL_PG_PRIMARY"), os.Getenv("RWPOOL_MY_PRIMARY")
	if pg == "" || my == "" || user == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but the test clusters are not described (RWPOOL_PG_PRIMARY, RWPOOL_MY_PRIMARY); run ./scripts/test.sh")
		}
		t.Skip("no test clusters: run ./scripts/test.sh (or scripts/cluster.sh up and source its env file)")
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	return user, pw, []testCluster{
		{
			name: "postgres", drivers: []string{"postgres", "pgx"}, primary: pg,
			replicas: split(os.Getenv("RWPOOL_PG_REPLICAS")),
			nodeDSN: func(user, pw, addr string) string {
				host, port, _ := strings.Cut(addr, ":")
				return fmt.Sprintf("host=%s port=%s user=%s password=%s dbname=%s sslmode=disable connect_timeout=5",
					host, port, user, pw, db)
			},
		},
		{
			name: "mariadb", drivers: []string{"mysql"}, primary: my,
			replicas: split(os.Getenv("RWPOOL_MY_REPLICAS")),
			nodeDSN: func(user, pw, addr string) string {
				return fmt.Sprintf("%s:%s@tcp(%s)/%s?timeout=5s", user, pw, addr, db)
			},
		},
	}
}

// compositeDSN builds an rwpool DSN with the given primary and replicas.
func (cl testCluster) compositeDSN(driver, user, pw, primary string, replicas ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver=%s;primary='%s'", driver, cl.nodeDSN(user, pw, primary))
	for _, r := range replicas {
		fmt.Fprintf(&b, ";replica='%s'", cl.nodeDSN(user, pw, r))
	}
	return b.String()
}

func TestCheckClusters(t *testing.T) {
	user, pw, cls := clusters(t)
	for _, cl := range cls {
		if len(cl.replicas) == 0 {
			t.Fatalf("%s: no replicas in the environment", cl.name)
		}
		for _, drv := range cl.drivers {
			t.Run(cl.name+"/"+drv, func(t *testing.T) {
				noSecret := func(out string) {
					t.Helper()
					if pw != "" && strings.Contains(out, pw) {
						t.Errorf("output shows the password:\n%s", out)
					}
				}
				t.Run("good", func(t *testing.T) {
					st, out, errb := runCmd(t, "check", "--timeout", "20s", cl.compositeDSN(drv, user, pw, cl.primary, cl.replicas...))
					noSecret(out + errb)
					if st != exitOK || errb != "" {
						t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
					}
					for _, want := range []string{
						"reachable  yes", "latency    min", "version    ", "role       ",
						"OK: all " + fmt.Sprint(1+len(cl.replicas)) + " node(s) reachable, roles match the DSN",
					} {
						if !strings.Contains(out, want) {
							t.Errorf("output lacks %q:\n%s", want, out)
						}
					}
					if strings.Contains(out, "!!!") || strings.Contains(out, "DOES NOT MATCH") {
						t.Errorf("a correct DSN is flagged:\n%s", out)
					}
					if strings.Count(out, "lag        ") != len(cl.replicas) {
						t.Errorf("want a lag line per replica:\n%s", out)
					}
				})
				// The primary and a replica swapped: both are flagged, loudly.
				t.Run("swapped", func(t *testing.T) {
					st, out, errb := runCmd(t, "check", "--timeout", "20s", cl.compositeDSN(drv, user, pw, cl.replicas[0], cl.primary))
					noSecret(out + errb)
					if st != exitProblem {
						t.Fatalf("status %d, want %d; stdout:\n%s", st, exitProblem, out)
					}
					for _, want := range []string{
						"!!! PROBLEM: primary is listed as the PRIMARY but is",
						"!!! PROBLEM: replica1 is listed as a REPLICA but ACCEPTS WRITES",
						"are the DSN's primary and replica swapped?",
						"DOES NOT MATCH the DSN",
						"2 problem(s) found",
					} {
						if !strings.Contains(out, want) {
							t.Errorf("output lacks %q:\n%s", want, out)
						}
					}
					if strings.Count(errb, "\n") != 1 || !strings.Contains(errb, "2 problem(s) found") {
						t.Errorf("stderr %q, want one line with the count", errb)
					}
				})
			})
		}
	}
}

// TestCheckMariaDBReplicaStatus: with the privilege for SHOW REPLICA
// STATUS (the cluster's root, empty password), the lag is
// Seconds_Behind_Master.
func TestCheckMariaDBReplicaStatus(t *testing.T) {
	_, _, cls := clusters(t)
	cl := cls[1]
	admin := os.Getenv("RWPOOL_MY_ADMIN_USER")
	if admin == "" {
		admin = "root"
	}
	dsnText := fmt.Sprintf("driver=mysql;primary='%s';replica='%s'",
		strings.Replace(cl.nodeDSN(admin, "", cl.primary), admin+":@", admin+"@", 1),
		strings.Replace(cl.nodeDSN(admin, "", cl.replicas[0]), admin+":@", admin+"@", 1))
	st, out, errb := runCmd(t, "check", "--timeout", "20s", dsnText)
	if st != exitOK {
		t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
	}
	want := "(Seconds_Behind_Master), replicating from " + cl.primary
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestCheckUnreachable needs no cluster: nothing listens on port 1.
func TestCheckUnreachable(t *testing.T) {
	const secret = "hunter2-pw"
	for _, drv := range []string{"mysql", "postgres", "pgx"} {
		nodeDSN := "u:" + secret + "@tcp(127.0.0.1:1)/db?timeout=2s"
		if drv != "mysql" {
			nodeDSN = "host=127.0.0.1 port=1 user=u password=" + secret + " dbname=db sslmode=disable connect_timeout=2"
		}
		st, out, errb := runCmd(t, "check", "--timeout", "5s", "driver="+drv+";primary='"+nodeDSN+"'")
		if st != exitProblem {
			t.Errorf("%s: status %d, want %d; stdout:\n%s", drv, st, exitProblem, out)
		}
		if !strings.Contains(out, "reachable  NO") || !strings.Contains(out, "!!! PROBLEM: primary (primary) is UNREACHABLE") {
			t.Errorf("%s: output:\n%s", drv, out)
		}
		if strings.Count(errb, "\n") != 1 {
			t.Errorf("%s: stderr %q, want one line", drv, errb)
		}
		if strings.Contains(out+errb, secret) {
			t.Errorf("%s: the password is shown:\n%s%s", drv, out, errb)
		}
		if !strings.Contains(out, "password=***") && !strings.Contains(out, "u:***@") {
			t.Errorf("%s: the node DSN is not shown redacted:\n%s", drv, out)
		}
	}
}

func TestCompareGTID(t *testing.T) {
	for _, tc := range []struct{ replica, primary, want string }{
		{"0-1-10", "0-1-10", "0 transactions behind"},
		{"0-1-7", "0-1-10", "3 transaction(s) behind"},
		{"0-1-7,1-2-5", "0-1-10,1-2-9", "7 transaction(s) behind"},
		{"", "0-1-4", "4 transaction(s) behind"},
		{"0-1-12", "0-1-10", "0 transactions behind"},
	} {
		if got := compareGTID(tc.replica, tc.primary); !strings.HasPrefix(got, tc.want) {
			t.Errorf("compareGTID(%q, %q) = %q, want %q...", tc.replica, tc.primary, got, tc.want)
		}
	}
}
