package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rwpool/rwpool/internal/testcluster"
)

func TestCheckClusters(t *testing.T) {
	for _, b := range testcluster.Backends(t) {
		if len(b.Replicas) == 0 {
			t.Fatalf("%s: no replicas in the environment", b.Name)
		}
		pw := b.Password
		t.Run(b.Name, func(t *testing.T) {
			noSecret := func(out string) {
				t.Helper()
				if pw != "" && strings.Contains(out, pw) {
					t.Errorf("output shows the password:\n%s", out)
				}
			}
			t.Run("good", func(t *testing.T) {
				st, out, errb := runCmd(t, "check", "--timeout", "20s", b.DSN(""))
				noSecret(out + errb)
				if st != exitOK || errb != "" {
					t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
				}
				for _, want := range []string{
					"reachable  yes", "latency    min", "version    ", "role       ",
					"OK: all " + fmt.Sprint(1+len(b.Replicas)) + " node(s) reachable, roles match the DSN",
				} {
					if !strings.Contains(out, want) {
						t.Errorf("output lacks %q:\n%s", want, out)
					}
				}
				if strings.Contains(out, "!!!") || strings.Contains(out, "DOES NOT MATCH") {
					t.Errorf("a correct DSN is flagged:\n%s", out)
				}
				if strings.Count(out, "lag        ") != len(b.Replicas) {
					t.Errorf("want a lag line per replica:\n%s", out)
				}
			})
			// The primary and a replica swapped: both are flagged, loudly.
			t.Run("swapped", func(t *testing.T) {
				st, out, errb := runCmd(t, "check", "--timeout", "20s", b.DSNOver(b.Replicas[0], []string{b.Primary}, ""))
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

// TestCheckMariaDBReplicaStatus: with the privilege for SHOW REPLICA
// STATUS (the cluster's root, empty password), the lag is
// Seconds_Behind_Master.
func TestCheckMariaDBReplicaStatus(t *testing.T) {
	admin := *testcluster.Get(t, testcluster.MariaDB)
	admin.User, admin.Password = os.Getenv("RWPOOL_MY_ADMIN_USER"), ""
	if admin.User == "" {
		admin.User = "root"
	}
	st, out, errb := runCmd(t, "check", "--timeout", "20s", admin.DSNOver(admin.Primary, admin.Replicas[:1], ""))
	if st != exitOK {
		t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
	}
	want := "(Seconds_Behind_Master), replicating from " + admin.Primary
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
