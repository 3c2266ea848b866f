package testcluster

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// OpenCounting opens rwpool over composite like sql.Open("rwpool",
// composite) does, and counts the leases database/sql takes: each time it
// hands a connection out and takes it back. rwpool.Stats works on the
// *sql.DB as usual.
func OpenCounting(composite string) (*sql.DB, *Leases, error) {
	c, err := (&rwpool.Driver{}).OpenConnector(composite)
	if err != nil {
		return nil, nil, err
	}
	l := &Leases{}
	return sql.OpenDB(countingConnector{Connector: c, l: l}), l, nil
}

// Leases counts the leases of a *sql.DB from OpenCounting.
type Leases struct{ n atomic.Int64 }

// Count returns the leases ended so far.
func (l *Leases) Count() int64 { return l.n.Load() }

type countingConnector struct {
	driver.Connector
	l *Leases
}

// Close closes rwpool's Connector: sql.DB.Close closes a Connector that
// is an io.Closer.
func (c countingConnector) Close() error { return c.Connector.(io.Closer).Close() }

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{rwConn: dc.(rwConn), l: c.l}, nil
}

// rwConn is what an rwpool connection implements.
type rwConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// countingConn counts a lease each time database/sql takes the connection
// back (IsValid), and forwards everything else.
type countingConn struct {
	rwConn
	l *Leases
}

func (c *countingConn) IsValid() bool {
	c.l.n.Add(1)
	return c.rwConn.IsValid()
}

// Reconnects is what a workload cost in real connections, per node summed.
type Reconnects struct {
	Leases, Dials, ClosedSession, ClosedBroken, ClosedExpired int64
}

// Measure returns the connection counters of db since before, a
// Reconnects of Stats taken earlier (the zero value for none).
func Measure(t testing.TB, db *sql.DB, l *Leases, before Reconnects) Reconnects {
	t.Helper()
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	r := Reconnects{Leases: l.Count()}
	for _, n := range s.Nodes {
		r.Dials += n.Dials
		r.ClosedSession += n.ClosedSession
		r.ClosedBroken += n.ClosedBroken
		r.ClosedExpired += n.ClosedExpired
	}
	return Reconnects{
		Leases:        r.Leases - before.Leases,
		Dials:         r.Dials - before.Dials,
		ClosedSession: r.ClosedSession - before.ClosedSession,
		ClosedBroken:  r.ClosedBroken - before.ClosedBroken,
		ClosedExpired: r.ClosedExpired - before.ClosedExpired,
	}
}

// String gives the counts per 1,000 leases.
func (r Reconnects) String() string {
	per := func(n int64) float64 {
		if r.Leases == 0 {
			return 0
		}
		return float64(n) * 1000 / float64(r.Leases)
	}
	return fmt.Sprintf("%d leases: %.1f dials per 1,000 leases; closed per 1,000: %.1f session, %.1f broken, %.1f expired",
		r.Leases, per(r.Dials), per(r.ClosedSession), per(r.ClosedBroken), per(r.ClosedExpired))
}

// MeasureReconnects opens rwpool over b with OpenCounting, hands the
// *sql.DB to setup (which migrates and returns one round of a workload),
// waits until rounds succeed (the replicas have the migration), then
// runs n rounds and returns what they cost. It logs the figures.
func MeasureReconnects(t *testing.T, b *Backend, n int, setup func(ctx context.Context, db *sql.DB) (round func(context.Context) error, cleanup func())) Reconnects {
	t.Helper()
	db, leases, err := OpenCounting(b.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	round, cleanup := setup(ctx, db)
	defer cleanup()
	// Reads go to either replica: wait until ten rounds in a row succeed,
	// so that both have replayed the migration.
	ok := 0
	Eventually(t, 10*time.Second, "ten rounds of the workload in a row", func() (bool, error) {
		err := round(ctx)
		if ok++; err != nil {
			ok = 0
		}
		return ok >= 10, err
	})
	before := Measure(t, db, leases, Reconnects{})
	for range n {
		if err := round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	r := Measure(t, db, leases, before)
	t.Logf("%s on %s: %s", strings.SplitN(t.Name(), "/", 2)[0], b.Name, r)
	return r
}
