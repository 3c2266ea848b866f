package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rwpool/rwpool/internal/dnsfake"
	"github.com/rwpool/rwpool/internal/testcluster"
)

// TestCheckDiscover: check asks every discover source, as the driver
// would, and examines the replicas it finds under the names the driver
// gives them; a source that fails is a problem.
func TestCheckDiscover(t *testing.T) {
	dns, err := dnsfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	dns.SetA("lo.test", "127.0.0.1")
	for _, b := range testcluster.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			var recs []dnsfake.SRV
			for _, r := range b.Replicas {
				p, _ := strconv.Atoi(testcluster.Port(r))
				recs = append(recs, dnsfake.SRV{Target: "lo.test", Port: uint16(p)})
			}
			dns.SetSRV("_db._tcp.replicas.test", recs...)
			good := b.DSNOver(b.Primary, nil, "discover='srv://"+dns.Addr()+"/_db._tcp.replicas.test' name=k8s")
			st, out, errb := runCmd(t, "check", "--timeout", "20s", good)
			if st != exitOK || errb != "" {
				t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
			}
			for _, want := range []string{
				"discover k8s (srv://" + dns.Addr() + "/_db._tcp.replicas.test): 2 replica(s), asked every 10s",
				"k8s/127.0.0.1:" + testcluster.Port(b.Replicas[0]), "k8s/127.0.0.1:" + testcluster.Port(b.Replicas[1]),
				"OK: all 3 node(s) reachable, roles match the DSN",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			dns.SetFail(true)
			defer dns.SetFail(false)
			st, out, _ = runCmd(t, "check", "--timeout", "5s", good)
			if st != exitProblem || !strings.Contains(out, "!!! PROBLEM: discover k8s (srv://") {
				t.Errorf("a failing source: status %d, stdout:\n%s", st, out)
			}
		})
	}
}
