package rwpool_test

import (
	"database/sql"
	"testing"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// writableFake answers rwpool's status queries (a PostgreSQL flavour).
var writableFake = fakedriver.Register("rwpool-test-writable-postgres", fakedriver.Options{AnswerOne: true})

// Without follow_promotion, a replica seen read-only that reports itself
// writable (promoted, or a crashed primary back on its own history) serves
// no reads until it is read-only again; one writable from the first look
// keeps serving. Without the rule, TestSimulation found reads of rows
// every other server had lost (testdata/simulation/abandoned-read-*).
func TestReplicaTurnedWritableServesNoReads(t *testing.T) {
	ro := fakedriver.Status{ReadOnly: true, LSN: "0/1000", ReplayAge: 0}
	rw := fakedriver.Status{LSN: "0/1000", ReplayAge: -1}
	writableFake.Fresh(t.Name() + "-p").SetStatus(rw)
	r1 := writableFake.Fresh(t.Name() + "-r1")
	r1.SetStatus(ro)
	r2 := writableFake.Fresh(t.Name() + "-r2")
	r2.SetStatus(rw) // a replica run without read_only
	db, err := sql.Open("rwpool", "driver=rwpool-test-writable-postgres;primary="+t.Name()+"-p;replica="+t.Name()+
		"-r1;replica="+t.Name()+"-r2;check_interval=20ms")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	state := func(name string) rwpool.State {
		snap, err := rwpool.Stats(db)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range snap.Nodes {
			if n.Name == name {
				return n.State
			}
		}
		t.Fatalf("no node %s", name)
		return 0
	}
	reads := func() (served1, served2 int64) {
		s1, s2 := r1.Served(), r2.Served()
		for range 50 {
			var v int
			if err := db.QueryRow("SELECT 1").Scan(&v); err != nil {
				t.Fatal(err)
			}
		}
		return r1.Served() - s1, r2.Served() - s2
	}
	waitFor(t, "replica1 seen read-only", func() bool {
		snap, _ := rwpool.Stats(db)
		return snap.Nodes[1].Reports == "read-only" && snap.Nodes[2].Reports == "writable"
	})
	if a, b := reads(); a == 0 || b == 0 {
		t.Fatalf("reads before: replica1 %d, replica2 %d; want both to serve (replica2 writable from the first look)", a, b)
	}
	r1.SetStatus(rw)
	waitFor(t, "replica1, writable after read-only, out of reads", func() bool { return state("replica1") == rwpool.Lagging })
	if a, b := reads(); a != 0 || b == 0 {
		t.Errorf("reads while replica1 is writable after read-only: replica1 %d, replica2 %d; want none on replica1", a, b)
	}
	r1.SetStatus(ro)
	waitFor(t, "replica1, read-only again, back in reads", func() bool { return state("replica1") == rwpool.Available })
	if a, _ := reads(); a == 0 {
		t.Error("replica1, read-only again, served no read")
	}
}
