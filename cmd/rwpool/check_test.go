package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
					"reachable  yes", "latency    min", ", p50 ", ", p99 ", "(20 pings)", "version    ", "role       ",
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

// TestCheckFollowPromotion: with follow_promotion=on, roles that differ
// from the DSN are followed, not problems, and each node's role as its
// server reports it is shown next to the DSN's.
func TestCheckFollowPromotion(t *testing.T) {
	for _, b := range testcluster.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st, out, errb := runCmd(t, "check", "--timeout", "20s", b.DSN("follow_promotion=on"))
			if st != exitOK || errb != "" {
				t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
			}
			for _, want := range []string{
				"follow_promotion=on", "primary (primary in the DSN, primary as the server reports): ",
				"replica1 (replica in the DSN, replica as the server reports): ", "roles match the DSN",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			// Swapped: what the servers report is followed.
			st, out, errb = runCmd(t, "check", "--timeout", "20s", b.DSNOver(b.Replicas[0], []string{b.Primary}, "follow_promotion=on"))
			if st != exitOK || errb != "" {
				t.Fatalf("swapped: status %d, stderr %q, stdout:\n%s", st, errb, out)
			}
			for _, want := range []string{
				"primary (primary in the DSN, replica as the server reports): ", ": followed (demoted)",
				"replica1 (replica in the DSN, primary as the server reports): ", ": followed (promoted)",
				"OK: all 2 node(s) reachable, 2 role change(s) followed (follow_promotion=on)",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("swapped: output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "!!!") || strings.Contains(out, "DOES NOT MATCH") {
				t.Errorf("swapped: a followed role is flagged:\n%s", out)
			}
		})
	}
}

// TestCheckFollowPromotionSplitBrain changes the real cluster: replica1
// promoted while the primary is writable is split brain, a problem even
// with follow_promotion=on; on MariaDB, a graceful switchover (the primary
// read-only, replica1 promoted) is followed, and a read-only primary with
// nobody promoted is a problem. The topology is restored afterwards.
func TestCheckFollowPromotionSplitBrain(t *testing.T) {
	backends := testcluster.Backends(t)
	dir := os.Getenv("RWPOOL_CLUSTER_DIR")
	if dir == "" {
		t.Fatal("RWPOOL_CLUSTER_DIR is not set: source the cluster's env file")
	}
	cl, err := loadCluster(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	do := func(t *testing.T, args ...string) {
		t.Helper()
		if _, err := cl.run(ctx, args...); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, b *testcluster.Backend, wantStatus int, want ...string) {
		t.Helper()
		st, out, errb := runCmd(t, "check", "--timeout", "20s", b.DSN("follow_promotion=on"))
		if st != wantStatus {
			t.Errorf("status %d, want %d; stderr %q, stdout:\n%s", st, wantStatus, errb, out)
		}
		for _, w := range want {
			// A leading "NOT " means: must not match.
			re, not := strings.CutPrefix(w, "NOT ")
			if regexp.MustCompile(re).MatchString(out) == not {
				t.Errorf("output: match of %q is %v, want %v:\n%s", re, not, !not, out)
			}
		}
	}
	seen := map[string]bool{}
	for _, b := range backends {
		if b.Name == testcluster.Pgx { // the same servers as postgres
			continue
		}
		if seen[b.Primary] {
			continue
		}
		seen[b.Primary] = true
		t.Run(b.Name, func(t *testing.T) {
			primary, r1 := portOf(b.Primary), portOf(b.Replicas[0])
			t.Cleanup(func() {
				for _, args := range [][]string{{"rejoin-node", r1}, {"set-read-only", primary, "off"}, {"wait-sync"}} {
					if _, err := cl.run(ctx, args...); err != nil {
						t.Errorf("cleanup: %v", err)
					}
				}
			})
			if !b.IsPostgres() {
				do(t, "set-read-only", primary, "on")
				check(t, b, exitProblem, `primary \(primary in the DSN, replica as the server reports\)`,
					`followed \(demoted\)`, `!!! PROBLEM: NO NODE ACCEPTS WRITES`)
				do(t, "promote-node", r1)
				check(t, b, exitOK, `followed \(demoted\)`,
					`replica1 \(replica in the DSN, primary as the server reports\)`, `followed \(promoted\)`,
					`OK: all 3 node\(s\) reachable, 2 role change\(s\) followed`,
					// The promoted node has no lag, and is not told to replicate.
					`NOT replica1 \(replica in the DSN, primary as the server reports\).*\n(  .*\n)*  (lag|note) `)
				do(t, "set-read-only", primary, "off")
			} else {
				do(t, "set-read-only", primary, "on")
				check(t, b, exitProblem, `primary \(primary in the DSN, replica as the server reports\)`,
					`default_transaction_read_only = on\): followed \(demoted\)`, `!!! PROBLEM: NO NODE ACCEPTS WRITES`)
				do(t, "set-read-only", primary, "off")
				do(t, "promote-node", r1)
			}
			check(t, b, exitProblem, `replica1 \(replica in the DSN, primary as the server reports\)`,
				`DOES NOT MATCH the DSN \(split brain\)`, `!!! PROBLEM: SPLIT BRAIN: 2 nodes report themselves writable \(primary, replica1\)`)
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

// TestCheckPooler: check tells a node behind a transaction pooler, one
// behind a session pooler and one dialled directly apart, and says what
// pooling means for rwpool without calling it a problem.
func TestCheckPooler(t *testing.T) {
	var tx, session *testcluster.Backend
	for _, b := range testcluster.Poolers(t) {
		switch b.Name {
		case testcluster.PgBouncerTx:
			tx = b
		case testcluster.PgBouncerSession:
			session = b
		}
	}
	direct := testcluster.Get(t, testcluster.Postgres)
	// The primary through transaction pooling, replica1 through session
	// pooling, replica2 dialled directly.
	d := "driver=postgres;primary='" + tx.NodeDSN(tx.Primary) + "';replica='" + session.NodeDSN(session.Replicas[0]) +
		"';replica='" + direct.NodeDSN(direct.Replicas[1]) + "'"
	st, out, errb := runCmd(t, "check", "--timeout", "20s", d)
	if st != exitOK || errb != "" {
		t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
	}
	sections := strings.Split(out, "\n\n")
	if len(sections) < 4 {
		t.Fatalf("want a section per node:\n%s", out)
	}
	primary, replica1, replica2 := sections[1], sections[2], sections[3]
	for _, want := range []string{"pooler     TRANSACTION POOLING", "the DSN dials port " + testcluster.Port(tx.Primary) +
		", the server listens on " + testcluster.Port(tx.Server(tx.Primary)), "keeps a session only within a transaction"} {
		if !strings.Contains(primary, want) {
			t.Errorf("primary: output lacks %q:\n%s", want, primary)
		}
	}
	if !strings.Contains(replica1, "pooler     a pooler in session mode, a proxy or a port mapping") ||
		strings.Contains(replica1, "TRANSACTION POOLING") {
		t.Errorf("replica1 (session pooling) reported as:\n%s", replica1)
	}
	if strings.Contains(replica2, "pooler") {
		t.Errorf("replica2 (dialled directly) reported behind a pooler:\n%s", replica2)
	}
}
